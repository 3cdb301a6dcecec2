"""`exp sweep SPEC --queue STORAGE_URL`: one sweep worked on by many processes on many machines,
through an Optuna storage used as the work queue (no scheduler of ours).

- The queue is an Optuna study in STORAGE_URL: `postgresql://...` (or another SQLAlchemy URL of a
  server database) or `journal:PATH`, Optuna's journal file, for machines sharing a file system.
  A sqlite URL is refused: one database file written from many machines locks and breaks its
  writers (optuna #820, #6036). The study is named after the sweep (`expspec-<paper>-<sweep
  hash>`, the hash of its trials' spec hashes): every process started with the same spec,
  overrides and queue works on the same study; another grid is another study.
- The process that creates the study opens the sweep's one MLflow parent run (the parent of an
  earlier invocation of the same sweep is reused, as without a queue), enqueues every trial once
  as a WAITING Optuna trial holding its index, and then records `expspec.parent_run_id` and
  `expspec.enqueued` in the study; the other processes wait for those and work under that parent.
- Trial states are Optuna's: WAITING (queued), RUNNING (leased), COMPLETE (finished), FAIL
  (failed), PRUNED. A worker takes a trial by moving it from WAITING to RUNNING, a change the
  storage makes for one process only, so each trial is taken once however many workers ask. The
  number of trials is fixed when they are enqueued, never counted per worker (`n_trials` is per
  worker in Optuna, optuna #2907, #3518), and a grid point is one queued trial, never sampled
  (#2039).
- A lease is a heartbeat: a worker writes the wall-clock time into its running trial's system
  attribute `expspec.heartbeat` every lease/6 seconds. A RUNNING trial whose heartbeat is older
  than the lease (its worker died, or lost the network) is failed and re-issued as a new WAITING
  trial with the same index and values by the first worker that sees it (one succeeds in failing
  it; the others find it finished). A worker that can no longer write its trial's heartbeat has
  lost the lease and stops that trial. The MLflow run the lost attempt left RUNNING is marked
  KILLED when the re-issued trial starts.
- Before a trial runs, the worker looks for a FINISHED MLflow run with the trial's spec hash in
  the experiment; when one exists the trial is COMPLETE with that run (linked into the parent, as
  `exp sweep` does), so a re-issued trial whose first attempt did finish never runs twice.
- A trial whose run fails is FAIL, with the last line of its output in the user attribute
  `expspec.error`, and is not re-issued: a failing spec fails the same way on every machine. A
  worker stops taking trials after `max_failures` failed trials in a row and exits 1 (a broken
  machine must not empty the queue, wandb #6594, #5088).
- A worker waits while trials run elsewhere (it may have to take one over) and ends when no trial
  is WAITING or RUNNING; the worker that sees the queue empty ends the parent run: FINISHED, or
  FAILED when a trial failed. Ctrl-C or SIGTERM stops this worker's trials (their runs KILLED) and
  re-queues them for the other workers.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

from framework.errors import UsageError
from framework.extras import missing

HEARTBEAT, PARENT_ATTR, ENQUEUED_ATTR = "expspec.heartbeat", "expspec.parent_run_id", "expspec.enqueued"
INDEX, NAME, RUN_ID, ERROR = "expspec.index", "expspec.trial", "expspec.run_id", "expspec.error"


def need(module: str) -> Any:
    """Import an optional module of the `distributed` extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(missing(module, "this command")) from None


def open_storage(url: str) -> Any:
    """The Optuna storage a `--queue` URL names (see the module docstring)."""
    optuna = need("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # its INFO line per trial would bury the worker's
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        path = Path(url.removeprefix("journal:"))
        if not str(path) or str(path) == ".":
            raise UsageError(f"--queue {url}: give the journal file's path, e.g. journal:/shared/sweeps.log")
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if url.startswith("sqlite"):
        raise UsageError(f"--queue {url}: a sqlite file breaks under writers on several machines (optuna #820); "
                         "use a server database (postgresql://user@host/db) or a journal file (journal:/shared/path.log)")
    if "://" not in url:
        raise UsageError(f"--queue {url}: expected postgresql://..., mysql://... or journal:PATH")
    return _rdb_storage(url)


def _rdb_storage(url: str, attempts: int = 5) -> Any:
    """Optuna's RDBStorage. Workers started at once on an empty database race in creating its
    tables (PostgreSQL: `duplicate key ... pg_type_typname_nsp_index`); the loser tries again
    and finds them made."""
    import optuna
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(attempts):
        try:
            return optuna.storages.RDBStorage(url, engine_kwargs={"pool_pre_ping": True})
        except (IntegrityError, ProgrammingError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Queue:
    """The sweep's Optuna study: take, lease, finish and re-issue trials (see the module docstring).

    Args:
        url: The `--queue` storage URL.
        name: The study's name.
        lease: Seconds without a heartbeat after which a RUNNING trial is re-issued.
        direction: Of the study's objective (a search sweep's `direction`).
    """

    def __init__(self, url: str, name: str, lease: float = 60.0, direction: str = "minimize") -> None:
        if lease <= 0:
            raise UsageError(f"--lease must be > 0 seconds, got {lease}")
        self.url, self.name, self.lease = url, name, lease
        self.storage = open_storage(url)
        self.created = self._create(direction)
        self.study_id = self.storage.get_study_id_from_name(name)

    def _create(self, direction: str) -> bool:
        """Create the study; False when another process created it first."""
        from optuna.exceptions import DuplicatedStudyError
        from optuna.study import StudyDirection

        try:
            self.storage.create_new_study([StudyDirection[direction.upper()]], self.name)
            return True
        except DuplicatedStudyError:
            return False

    def study(self, sampler: Any = None) -> Any:
        import optuna

        return optuna.load_study(study_name=self.name, storage=self.storage, sampler=sampler)

    def enqueue(self, count: int, names: list[str], parent_run_id: str) -> None:
        """Enqueue trials 0..count-1 once (the study's creator does), then publish the parent."""
        from optuna.trial import TrialState, create_trial

        study = self.study()
        for index in range(count):
            study.add_trial(create_trial(state=TrialState.WAITING,
                                         user_attrs={INDEX: index, NAME: names[index] if index < len(names) else ""}))
        self.storage.set_study_user_attr(self.study_id, PARENT_ATTR, parent_run_id)
        self.storage.set_study_user_attr(self.study_id, ENQUEUED_ATTR, count)

    def wait_ready(self, timeout: float = 120.0) -> str:
        """The parent run id, once the creator has enqueued every trial."""
        deadline = time.monotonic() + timeout
        while True:
            attrs = self.storage.get_study_user_attrs(self.study_id)
            if ENQUEUED_ATTR in attrs:
                return attrs[PARENT_ATTR]
            if time.monotonic() > deadline:
                raise RuntimeError(f"study {self.name} in {self.url} was created but its trials were not enqueued "
                                   f"within {timeout:.0f} s (its creator died while enqueueing?); delete the study "
                                   f"(optuna delete-study --storage URL --study-name {self.name}) and start again")
            time.sleep(0.5)

    def trials(self, *states: Any) -> list[Any]:
        return self.storage.get_all_trials(self.study_id, deepcopy=False, states=states or None)

    def take(self) -> Any | None:
        """A WAITING trial moved to RUNNING by this process (its first heartbeat written), or None."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        for trial in self.trials(TrialState.WAITING):
            try:
                if not self.storage.set_trial_state_values(trial._trial_id, state=TrialState.RUNNING):
                    continue
            except UpdateFinishedTrialError:
                continue
            self.storage.set_trial_system_attr(trial._trial_id, HEARTBEAT, time.time())
            self.storage.set_trial_user_attr(trial._trial_id, "expspec.worker", worker_id())
            return self.storage.get_trial(trial._trial_id)
        return None

    def heartbeat(self, trial_id: int) -> bool:
        """Renew the lease; False when the trial is no longer RUNNING (the lease was lost)."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            self.storage.set_trial_system_attr(trial_id, HEARTBEAT, time.time())
        except UpdateFinishedTrialError:
            return False
        return True

    def reap(self) -> list[tuple[int, int]]:
        """Fail every RUNNING trial whose heartbeat is older than the lease and re-issue it as a
        WAITING trial with the same index, values and name; the (failed, new) trial numbers."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        reissued = []
        now = time.time()
        for trial in self.trials(TrialState.RUNNING):
            beat = trial.system_attrs.get(HEARTBEAT) or trial.datetime_start.timestamp()
            if now - beat <= self.lease:
                continue
            try:
                self.storage.set_trial_user_attr(trial._trial_id, ERROR, f"lease lost: no heartbeat for "
                                                 f"{now - beat:.0f} s (worker {trial.user_attrs.get('expspec.worker')})")
                if not self.storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
                    continue
            except UpdateFinishedTrialError:
                continue  # another worker failed it first, or its own worker finished it
            reissued.append((trial.number, self.reissue(trial)))
        return reissued

    def reissue(self, trial: Any) -> int:
        """Queue a failed trial again: a new WAITING trial with its index, name and values; its number."""
        from optuna.trial import TrialState, create_trial

        self.study().add_trial(create_trial(
            state=TrialState.WAITING, params=trial.params, distributions=trial.distributions,
            user_attrs={k: v for k, v in trial.user_attrs.items() if k in (INDEX, NAME)},
            system_attrs={"expspec.reissue_of": trial.number}))
        return max(t.number for t in self.trials())

    def finish(self, trial_id: int, state: Any, value: float | None = None, **attrs: Any) -> bool:
        """Record a taken trial's end; False when its lease was lost meanwhile."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            for key, item in attrs.items():
                if item is not None:
                    self.storage.set_trial_user_attr(trial_id, f"expspec.{key}", item)
            return self.storage.set_trial_state_values(trial_id, state=state,
                                                       values=None if value is None else [value])
        except UpdateFinishedTrialError:
            return False

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for trial in self.trials():
            counts[trial.state.name] = counts.get(trial.state.name, 0) + 1
        return counts

    def drained(self) -> bool:
        """No trial WAITING or RUNNING."""
        from optuna.trial import TrialState

        return not self.trials(TrialState.WAITING, TrialState.RUNNING)


class Lease(threading.Thread):
    """Writes a taken trial's heartbeat every lease/6 seconds until `stop()`; when the trial is no
    longer RUNNING (another worker re-issued it) calls `on_lost` once and ends."""

    def __init__(self, queue: Queue, trial_id: int, on_lost: Callable[[], None]) -> None:
        super().__init__(daemon=True, name=f"expspec-lease-{trial_id}")
        self.queue, self.trial_id, self.on_lost = queue, trial_id, on_lost
        self.stopped = threading.Event()
        self.lost = False

    def run(self) -> None:
        while not self.stopped.wait(self.queue.lease / 6):
            try:
                alive = self.queue.heartbeat(self.trial_id)
            except Exception:  # a network blip: keep trying until the lease runs out
                continue
            if not alive:
                self.lost = True
                self.on_lost()
                return

    def stop(self) -> None:
        self.stopped.set()
        self.join()
