"""The Lightning side of tracking, apart from framework.tracking so that importing that module
(`exp compare`, `exp reproduce`) does not import Lightning."""

from __future__ import annotations

import os
import re
import time
from typing import Any, Mapping

from lightning.pytorch.loggers import MLFlowLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment

from framework.interrupts import deferred

# Seconds between metric writes. One MLflow `log_batch` into sqlite costs milliseconds (a commit);
# writing at each of Lightning's logging steps (every 10 steps by default) cost tiny runs ~10% of
# their training time.
FLUSH_SECONDS = 5.0  # $EXPSPEC_METRICS_FLUSH_SECONDS overrides it (0: write at every logging step)
MAX_BATCH = 1000  # metrics per `log_batch`, MLflow's limit
# Bookkeeping that Lightning adds to every logged dict: the epoch is a step axis, not a result
# (MLflow's charts can plot against steps or time); a user sees the metrics their spec names.
BOOKKEEPING = frozenset({"epoch"})


class RunLogger(MLFlowLogger):
    """Lightning's MLflow logger, writing into a run the runner created. Lightning finalizes its
    loggers at the end of fit *and* of test; the runner, not Lightning, sets the final status.

    Metrics are buffered: `log_metrics` queues them (the same keys, values, steps and timestamps
    Lightning's logger writes) and they are written with one `log_batch` once `flush_seconds`
    have passed since the last write, and at every `finalize` (end of fit, end of test, and when
    Lightning stops on an exception), so the run holds every value before the runner ends it.
    The MLflow UI lags a live run by at most `flush_seconds`; a process killed outright loses
    at most the metrics logged since the last checkpoint, which a resume logs again. With
    `asynchronous` and `flush_seconds > 0` the periodic writes are asynchronous (MLflow's async
    logging: a background thread sends them), so a remote tracking server's latency never stalls
    a training step; `finalize` and every resume checkpoint wait until they are stored. Otherwise
    every write is synchronous (the run holds a value once it is logged).

    Args:
        flush_seconds: Seconds between metric writes (above).
        already_logged: A resumed run's existing history, as counts of (metric, step)
            (`Tracker.logged_steps`). A metric at a step before the last one the run holds for
            it is dropped; at that last step, as many values as the run already holds there are
            dropped (a metric may be logged twice at one step, e.g. at an epoch's last step after
            the train batch and after validation). Everything later is logged. `epoch` is never
            logged (`BOOKKEEPING`). The resume checkpoint flushes the
            queue when it is written (components/callbacks/resume.py), so the run holds every value up to the
            step a resume starts from.
        upload_checkpoints: Upload the resume checkpoint as the artifact
            `checkpoints/resume.ckpt` each time it is written (`checkpoint_written`), so that
            `exp resume` can fetch it on another machine (framework/store.py).
        asynchronous: Periodic writes in MLflow's background thread (above). The runner turns it
            on for a tracking server only (`framework.store.remote_store`): a local sqlite write
            takes milliseconds, and ending a run that used MLflow's async logging waits for its
            thread to notice (`set_terminated` joins it; the thread polls its queue once a
            second), which cost every run of a local store 0-1 s, ~0.5 s on average."""

    def __init__(self, *args: Any, flush_seconds: float | None = None,
                 already_logged: dict[tuple[str, int], int] | None = None, upload_checkpoints: bool = False,
                 asynchronous: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.upload_checkpoints = upload_checkpoints
        self.asynchronous = asynchronous
        self._in_flight: list[Any] = []  # RunOperations of asynchronous writes not waited for yet
        if flush_seconds is None:
            flush_seconds = float(os.environ.get("EXPSPEC_METRICS_FLUSH_SECONDS", FLUSH_SECONDS))
        self.flush_seconds = flush_seconds
        self._pending: list[Any] = []
        self._written = time.monotonic()
        self._already_logged = dict(already_logged or {})
        self._last_logged: dict[str, int] = {}
        for key, step in self._already_logged:
            self._last_logged[key] = max(step, self._last_logged.get(key, step))

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric

        if self._last_logged:
            metrics = {k: v for k, v in metrics.items() if not self._logged_before(k, step)}

        now = int(time.time() * 1000)
        # Lightning's rule: characters MLflow does not allow in a metric name are dropped.
        self._pending += [Metric(re.sub("[^a-zA-Z0-9_/. -]+", "", key), float(value), now, step or 0)
                          for key, value in metrics.items() if not isinstance(value, str) and key not in BOOKKEEPING]
        if time.monotonic() - self._written >= self.flush_seconds:
            self.flush()

    @property
    @rank_zero_experiment
    def experiment(self) -> Any:
        """The MLflow client of this run's store. Lightning's own first use of it also sets
        MLflow's process-wide tracking URI, and with it $MLFLOW_TRACKING_URI, for the rest of the
        process: a later run or command would find this run's store there (framework/invocation.py
        says which store a command uses). The runner made the run, so only its experiment is read."""
        if not self._initialized:
            self._experiment_id = self._mlflow_client.get_run(self._run_id).info.experiment_id
            self._initialized = True
        return self._mlflow_client

    def _logged_before(self, key: str, step: int | None) -> bool:
        last = self._last_logged.get(key)
        if last is None or step is None or step > last:
            return False
        if step < last:
            return True
        remaining = self._already_logged.get((key, step), 0)
        self._already_logged[(key, step)] = max(0, remaining - 1)
        return remaining > 0

    def flush(self) -> None:
        """Write the queued metrics now, whole: Ctrl-C or SIGTERM waits for the write to end
        (framework/interrupts.py; a write cut in half left the sqlite store locked)."""
        pending, self._pending = self._pending, []
        synchronous = self.flush_seconds <= 0 or not self.asynchronous
        with deferred():
            for start in range(0, len(pending), MAX_BATCH):
                operation = self.experiment.log_batch(self.run_id, metrics=pending[start : start + MAX_BATCH],
                                                      synchronous=synchronous)
                if operation is not None:
                    self._in_flight.append(operation)
        self._written = time.monotonic()

    def wait(self) -> None:
        """Write the queued metrics and wait until every asynchronous write is stored."""
        self.flush()
        in_flight, self._in_flight = self._in_flight, []
        for operation in in_flight:
            operation.wait()

    def checkpoint_written(self, path: str | os.PathLike) -> None:
        """The resume checkpoint was just written at `path`: the run must hold every metric up to
        its step (a resume logs only later ones), and, with `upload_checkpoints`, the file."""
        self.wait()
        if self.upload_checkpoints:
            self.experiment.log_artifact(self.run_id, str(path), "checkpoints")

    def finalize(self, status: str = "success") -> None:
        self.wait()
        if self._initialized and self._checkpoint_callback:
            self._scan_and_log_checkpoints(self._checkpoint_callback)
