"""Ctrl-C and SIGTERM in commands that train: a KeyboardInterrupt, never in the middle of a write
to the tracking store.

A signal that landed while a metric batch was being written (an sqlite `executemany` inside
MLflow's transaction) cut the write in half: the transaction kept the database locked, so ending
the run as KILLED waited out MLflow's 20 s busy timeout twice and failed, and the run was left
RUNNING (seen in CI under load, then reproduced: tests/framework/test_resume.py). Inside
`deferred()` a signal is remembered, and raised as KeyboardInterrupt when the block ends. A second
signal while one waits is raised at once: a write that hangs (a tracking server that does not
answer, which MLflow retries for minutes) can still be stopped, as Ctrl-C pressed twice.

`install()` is called by framework.cli for the commands that train. Python runs signal handlers in
the main thread only, so `deferred()` holds signals for code on that thread (the runner and its
logger); on another thread (the system-metrics sampler) it does nothing. `WholeCalls` runs every
method call of an object inside `deferred()`: framework.tracking.client() wraps the MLflow client
in it, so no store write of a run's start or end (creating the run, its parameters and tags, the
result's upload, its status) can be cut in half either, not only the metric batches.
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_depth = 0  # nested deferred() blocks open on the main thread
_pending: str | None = None  # the message of a signal that arrived inside one


def install() -> None:
    """SIGTERM (a scheduler, `exp sweep --fail-fast`) ends a run as Ctrl-C does, and both wait for
    a `deferred()` block. SIGINT is left alone when it is ignored (a background job, `nohup`)."""
    signal.signal(signal.SIGTERM, _handler)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)


def _handler(signum: int, frame: Any) -> None:
    global _pending
    message = "" if signum == signal.SIGINT else f"terminated by signal {signum}"
    if _depth and _pending is None:
        _pending = message
        return
    _pending = None  # raised now: the block's end has nothing left to raise
    raise KeyboardInterrupt(message)


@contextmanager
def deferred() -> Iterator[None]:
    """Run the block whole: Ctrl-C or SIGTERM arriving meanwhile is raised when it ends (after an
    exception of its own, that exception goes on instead, and the signal waits for the next end);
    a second signal meanwhile is raised at once."""
    global _depth, _pending
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: a block here cannot hold them (module docstring)
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    if not _depth and _pending is not None:
        message, _pending = _pending, None
        raise KeyboardInterrupt(message)


class WholeCalls:
    """`target` with each of its method calls run whole, inside `deferred()`; anything else it has
    (attributes, properties) read as they are. A call that hangs is stopped by a second signal."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._target, name)
        if not callable(found):
            return found

        @functools.wraps(found)
        def whole(*args: Any, **kwargs: Any) -> Any:
            with deferred():
                return found(*args, **kwargs)

        return whole

    def __repr__(self) -> str:
        return f"WholeCalls({self._target!r})"
