"""framework/interrupts.py: Ctrl-C and SIGTERM wait for a `deferred()` block, e.g. a store write."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
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


def test_a_whole_call_finishes_before_the_signal_is_raised(installed: None) -> None:
    """WholeCalls (how framework.tracking.client() wraps MLflow's client): a signal inside a call
    waits for the call to return; attributes are read through unchanged."""
    done: list[str] = []

    class Store:
        name = "store"

        def write(self, value: str) -> str:
            os.kill(os.getpid(), signal.SIGTERM)
            done.extend(value for _ in range(100))  # runs: the signal waits
            return value

    store = interrupts.WholeCalls(Store())
    assert store.name == "store"
    with pytest.raises(KeyboardInterrupt, match="terminated by signal"):
        store.write("x")
    assert done == ["x"] * 100


def test_a_block_on_another_thread_holds_no_signal(installed: None) -> None:
    """Signals reach the main thread only: the system-metrics sampler writing in a `deferred()`
    block on its thread must not make the main thread's Ctrl-C wait (or raise on the sampler)."""
    import threading

    inside, release = threading.Event(), threading.Event()

    def sampler() -> None:
        with interrupts.deferred():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=sampler)
    thread.start()
    try:
        inside.wait(10)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
    finally:
        release.set()
        thread.join(10)
    with interrupts.deferred():  # nothing pending
        pass


def _operative(store: str, name: str) -> dict[str, Any]:
    return {"tracking": {"uri": store, "log_checkpoints": False}, "paper": "interrupts", "name": name,
            "description": ""}


def _signalled_after(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """MlflowClient.<method> gets SIGTERM as it ends: its write is done, the caller not yet back."""
    from mlflow.tracking import MlflowClient

    real = getattr(MlflowClient, method)

    def signalled(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = real(self, *args, **kwargs)
        monkeypatch.setattr(MlflowClient, method, real)  # once
        os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(MlflowClient, method, signalled)


def test_sigterm_as_the_run_is_created_ends_it_killed(installed: None, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal at the end of create_run: the run exists in the store, so it must end KILLED
    (before, the interrupt came out of create_run before the tracker knew the run: left RUNNING)."""
    from mlflow.tracking import MlflowClient

    from framework.tracking import Tracker

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _signalled_after(monkeypatch, "create_run")
    tracker = Tracker(_operative(store, "created"), "spec.yaml", "hash", [])
    with pytest.raises(KeyboardInterrupt):
        tracker.start()
    (run,) = MlflowClient(store).search_runs([e.experiment_id for e in MlflowClient(store).search_experiments()])
    assert run.info.status == "KILLED" and run.info.run_id == tracker.run_id


def test_sigterm_as_a_run_is_resumed_ends_it_killed_again(installed: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`exp resume` sets the run RUNNING, then tags it: a signal in between ends it KILLED again
    (before, it was left RUNNING until a later run on this host reaped it)."""
    from mlflow.tracking import MlflowClient

    from framework.tracking import Tracker

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(store)
    run_id = client.create_run(client.create_experiment("interrupts")).info.run_id
    client.set_terminated(run_id, "KILLED")
    _signalled_after(monkeypatch, "update_run")
    with pytest.raises(KeyboardInterrupt):
        Tracker(_operative(store, "resumed"), "spec.yaml", "hash", []).attach(run_id)
    assert client.get_run(run_id).info.status == "KILLED"
