"""framework/interrupts.py: Ctrl-C and SIGTERM wait for a `deferred()` block, e.g. a store write."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from framework import interrupts


@pytest.fixture
def installed() -> Iterator[None]:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.install()
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_outside_a_block_interrupts_at_once(installed: None, sig: int) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        for _ in range(1000):  # the handler runs between bytecodes: here, at the latest
            pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_inside_a_block_waits_for_its_end(installed: None, sig: int) -> None:
    done = []
    with pytest.raises(KeyboardInterrupt) as raised:
        with interrupts.deferred():
            with interrupts.deferred():  # nested: only the outermost end raises
                os.kill(os.getpid(), sig)
                done += [i for i in range(1000)]
            done.append("inner end")
        done.append("never")
    assert done[-1] == "inner end" and len(done) == 1001
    assert str(raised.value) == ("" if sig == signal.SIGINT else f"terminated by signal {int(sig)}")
    with interrupts.deferred():  # nothing left pending
        pass


def test_a_second_signal_inside_a_block_interrupts_at_once(installed: None) -> None:
    """Ctrl-C pressed twice (or SIGTERM after it) stops a block that hangs, e.g. a store write to
    a tracking server that does not answer."""
    done = []
    with pytest.raises(KeyboardInterrupt, match="terminated by signal"):
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("first waited")
            os.kill(os.getpid(), signal.SIGTERM)
            done.append("never")
    assert done == ["first waited"]
    with interrupts.deferred():  # the first is not raised again later
        pass


def test_an_ignored_sigint_stays_ignored() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        interrupts.install()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is interrupts._handler
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_a_metric_write_is_never_cut_in_half(installed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while the logger writes a metric batch: the batch is written whole, then the run
    is interrupted (a write cut in half left the sqlite store locked and the run RUNNING)."""
    from framework.mlflow_logger import RunLogger

    written: list[Any] = []

    class Experiment:
        def log_batch(self, run_id: str, metrics: list[Any], synchronous: bool) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            written.extend(metrics)  # runs: the signal waits

    logger = RunLogger.__new__(RunLogger)
    logger._pending, logger._in_flight, logger.flush_seconds, logger.asynchronous = ["m1", "m2"], [], 0.0, False
    monkeypatch.setattr(RunLogger, "experiment", property(lambda self: Experiment()))
    monkeypatch.setattr(RunLogger, "run_id", property(lambda self: "run"))
    with pytest.raises(KeyboardInterrupt, match="terminated by signal"):
        logger.flush()
    assert written == ["m1", "m2"]
