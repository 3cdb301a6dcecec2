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

import json
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from framework.errors import SpecError, UsageError
from framework.plan import Trial, named_trial
from framework.extras import missing

HEARTBEAT, PARENT_ATTR, ENQUEUED_ATTR = "expspec.heartbeat", "expspec.parent_run_id", "expspec.enqueued"
INDEX, NAME, RUN_ID, ERROR = "expspec.index", "expspec.trial", "expspec.run_id", "expspec.error"
# A search trial's run reads where to report its metric from this variable (`pruning_callback`),
# and says it was pruned in this tag.
PRUNE_ENV, PRUNED_TAG = "EXPSPEC_OPTUNA_TRIAL", "expspec.pruned"


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


@dataclass
class WorkerReport:
    """What one worker did: its outcomes (as `exp sweep` reports them) and why it stopped."""

    parent_run_id: str
    outcomes: list[Any] = field(default_factory=list)
    stopped_early: str = ""


class Worker:
    """One `exp sweep SPEC --queue URL` process: takes trials from the queue, `jobs` at a time,
    until the queue is drained, it has failed `max_failures` trials in a row, or it is stopped
    (see the module docstring). Trials run as `exp sweep` runs them (`framework.sweep`)."""

    def __init__(self, spec_path: str | Path, overrides: list[str], url: str, jobs: int = 1, lease: float = 60.0,
                 max_failures: int = 3, isolate: str = "fork", echo: Any = print, cores: int | None = None) -> None:
        from framework import sweep
        from framework.tracking import client

        if max_failures < 1:
            raise UsageError(f"--max-failures must be >= 1, got {max_failures}")
        self.spec_path, self.overrides, self.jobs, self.echo = spec_path, list(overrides), max(1, jobs), echo
        self.max_failures = max_failures
        self.plan = sweep.SweepPlan(spec_path, self.overrides)
        self.trials, self.hashes, self.base, self.search = self.plan.trials, self.plan.hashes, self.plan.base, self.plan.optuna
        identity = [*self.hashes, json.dumps(self.search, sort_keys=True)] if self.search else self.hashes
        self.queue = Queue(url, f"expspec-{self.base['paper']}-{sweep.sweep_hash_of(identity)}", lease,
                           direction=self.search["direction"] if self.search else "minimize")
        self.count = self.search["trials"] if self.search else len(self.trials)
        self.client = client(self.base["tracking"]["uri"])
        self.preload = sweep.component_modules(self.base)
        if isolate == "fork":
            sweep.warm_context(self.preload)  # imports while the queue is opened
        if self.queue.created:
            tracker, _ = sweep.open_parent(spec_path, self.overrides, self.base, self.hashes,
                                           self.search["metric"] if self.search else None)
            # the parent outlives this worker: never an orphan for `Tracker.reap_orphans` to close
            self.client.delete_tag(tracker.run_id, "expspec.pid")
            self.queue.enqueue(self.count, [] if self.search else [t.name for t in self.trials], tracker.run_id)
        self.parent = self.queue.wait_ready()
        self.experiment = self.client.get_run(self.parent).info.experiment_id
        threads = sweep._threads(self.base, self.overrides, self.jobs, cores)
        args = (spec_path, self.overrides, self.parent, self.base["name"], threads)
        self.launcher = sweep.ForkedTrials(*args, self.preload) if isolate == "fork" else sweep.TrialProcesses(*args)
        self.report = WorkerReport(self.parent)
        self.lock = threading.Lock()
        self.failures_in_a_row = 0
        self.interrupted = False
        echo(f"worker {worker_id()}: sweep {self.base['name']}, {self.count} trial(s) in study "
             f"{self.queue.name} ({url}), {self.jobs} job(s) x {threads} thread(s); parent run {self.parent}")

    def run(self) -> WorkerReport:
        """Work until done (see the class docstring); the parent run ended when the queue drained."""
        from framework import sweep

        pool = ThreadPoolExecutor(max_workers=self.jobs)
        slots = [pool.submit(self._slot) for _ in range(self.jobs)]
        try:
            for slot in slots:
                slot.result()
        except BaseException:  # Ctrl-C or SIGTERM: stop this worker's trials, re-queue them
            self.interrupted = True
            self.report.stopped_early = "interrupted"
            self.launcher.stop()
            pool.shutdown(wait=True)
            raise
        finally:
            pool.shutdown(wait=True)
            import shutil

            shutil.rmtree(self.launcher.workdir, ignore_errors=True)
        self.echo(sweep.summary(sweep.SweepResult(self.parent, self.report.outcomes)))
        self._end_parent()
        return self.report

    def _slot(self) -> None:
        """Take and run trials one after another until the queue is drained or this worker stops."""
        while not (self.interrupted or self.report.stopped_early):
            for failed, new in self.queue.reap():
                self.echo(f"[re-issue] trial #{failed} lost its lease (no heartbeat for {self.queue.lease:.0f} s): "
                          f"queued again as #{new}")
            taken = self.queue.take()
            if taken is None:
                if self.queue.drained():
                    return
                time.sleep(min(1.0, self.queue.lease / 6))  # trials run elsewhere: one may be re-issued
                continue
            outcome = self._run_taken(taken)
            with self.lock:
                self.report.outcomes.append(outcome)
                done = len(self.report.outcomes)
                self.echo(_progress(outcome, done, taken.number))
                self._count_failure(outcome)

    def _count_failure(self, outcome: Any) -> None:
        from framework.sweep import FAILED, KILLED

        if outcome.status not in (FAILED, KILLED):
            self.failures_in_a_row = 0
            return
        self.failures_in_a_row += 1
        if self.failures_in_a_row >= self.max_failures and not self.report.stopped_early:
            self.report.stopped_early = (f"{self.failures_in_a_row} failed trials in a row on this worker: it takes no "
                                         "more (--max-failures); the other workers go on")
            self.echo(f"worker {worker_id()} stops: {self.report.stopped_early}")

    def _run_taken(self, taken: Any) -> Any:
        """Run a taken trial (or find it finished), record its end in the queue; its outcome."""
        from optuna.trial import TrialState

        from framework.sweep import FINISHED, SKIPPED, TrialOutcome, link_skipped

        index = taken.user_attrs[INDEX]
        self._close_lost_attempts(index, taken.number)
        try:
            trial, spec_hash = self._trial(index, taken)
        except (SpecError, TypeError, ValueError) as error:  # a drawn value the spec does not accept
            self.queue.finish(taken._trial_id, TrialState.FAIL, error=str(error)[:5000])
            return TrialOutcome(Trial(f"trial #{taken.number}", {}), "FAILED", message=str(error).splitlines()[-1])
        done = self.client.search_runs([self.experiment], f"tags.`expspec.spec_hash` = '{spec_hash}' and "
                                       "attributes.status = 'FINISHED'", max_results=1)
        if done:
            outcome = TrialOutcome(trial, SKIPPED, run_id=done[0].info.run_id, metrics=done[0].data.metrics,
                                   message="finished before")
            link_skipped(self.client, self.parent, {index: outcome}, self.echo)
            self._record(taken, outcome)
            return outcome
        tags = {"expspec.queue.study": self.queue.name, "expspec.queue.index": index,
                "expspec.queue.trial": taken.number, "expspec.queue.worker": worker_id()}
        env = {"EXPSPEC_RUN_TAGS": json.dumps(tags)}
        if self.search and self.search["pruner"] != "none":
            env[PRUNE_ENV] = json.dumps({"url": self.queue.url, "study": self.queue.name, "trial_id": taken._trial_id,
                                         "metric": self.search["metric"], "pruner": self.search["pruner"]})
        lease = Lease(self.queue, taken._trial_id, lambda: self._stop_trial(taken.number))
        lease.start()
        try:
            outcome = self.launcher.run(taken.number, trial, env)
        finally:
            lease.stop()
        if lease.lost:
            outcome.status, outcome.message = "LOST", "lease lost (another worker re-issued the trial); stopped here"
        elif self.interrupted:
            self.queue.finish(taken._trial_id, TrialState.FAIL, error="its worker was interrupted; re-issued")
            self.queue.reissue(self.queue.storage.get_trial(taken._trial_id))
            outcome.message += " (re-queued)"
        elif not self._record(taken, outcome):
            outcome.status, outcome.message = "LOST", "lease lost before the trial's end was recorded"
        return outcome

    def _trial(self, index: int, taken: Any) -> tuple[Trial, str]:
        """(the trial, its spec hash): a grid trial by its index; a search trial drawn now by the
        sampler (a re-issued one keeps the values drawn for it before)."""
        if not self.search:
            return self.trials[index], self.hashes[index]
        import optuna

        sampler = make_sampler(self.search["sampler"], self.search["seed"], taken.number)
        drawn = optuna.Trial(self.queue.study(sampler), taken._trial_id)
        trial = named_trial({key: suggest(drawn, key, dist) for key, dist in self.search["params"].items()})
        self.queue.storage.set_trial_user_attr(taken._trial_id, NAME, trial.name)
        return trial, self.plan.hash_of(trial)

    def _record(self, taken: Any, outcome: Any) -> bool:
        """Record a trial's end in the queue: COMPLETE (a search: with its metric's value), PRUNED
        (its run says the pruner stopped it), else FAIL with the message; False when the lease was lost."""
        from optuna.trial import TrialState

        from framework.sweep import FINISHED, SKIPPED

        if outcome.status not in (FINISHED, SKIPPED):
            return self.queue.finish(taken._trial_id, TrialState.FAIL, run_id=outcome.run_id, error=outcome.message)
        if not self.search:
            return self.queue.finish(taken._trial_id, TrialState.COMPLETE, run_id=outcome.run_id)
        metric = self.search["metric"]
        pruned = self.client.get_run(outcome.run_id).data.tags.get(PRUNED_TAG)
        if pruned:
            outcome.message = f"pruned: {pruned}"
            return self.queue.finish(taken._trial_id, TrialState.PRUNED, run_id=outcome.run_id, pruned=pruned)
        if metric not in outcome.metrics:
            outcome.status = "FAILED"
            outcome.message = (f"the run reported no '{metric}' (sweep.optuna.metric); it reported: "
                               f"{', '.join(sorted(outcome.metrics)) or 'nothing'}")
            return self.queue.finish(taken._trial_id, TrialState.FAIL, run_id=outcome.run_id, error=outcome.message)
        return self.queue.finish(taken._trial_id, TrialState.COMPLETE, value=outcome.metrics[metric],
                                 run_id=outcome.run_id)

    def _stop_trial(self, number: int) -> None:
        handle = self.launcher.running.get(number)
        if handle is not None:
            self.echo(f"[lease lost] trial #{number}: another worker re-issued it; stopping it here")
            self.launcher.terminate(handle)

    def _close_lost_attempts(self, index: int, number: int) -> None:
        """Mark KILLED the MLflow runs earlier attempts of this trial left RUNNING (their worker died)."""
        runs = self.client.search_runs([self.experiment], f"tags.`expspec.queue.study` = '{self.queue.name}' and "
                                       f"tags.`expspec.queue.index` = '{index}' and attributes.status = 'RUNNING'")
        for run in runs:
            self.client.set_tag(run.info.run_id, "expspec.error", f"its worker lost the lease of queue trial "
                                f"#{run.data.tags.get('expspec.queue.trial')}; re-issued as trial #{number}")
            self.client.set_terminated(run.info.run_id, "KILLED")

    def _best(self) -> None:
        """Tag the parent run with the search's best trial (`expspec.best_run_id`, `expspec.best_value`)."""
        from optuna.trial import TrialState

        done = [t for t in self.queue.trials(TrialState.COMPLETE) if t.values]
        if not done:
            return
        pick = max if self.search["direction"] == "maximize" else min
        best = pick(done, key=lambda t: t.values[0])
        self.client.set_tag(self.parent, "expspec.best_run_id", best.user_attrs.get(RUN_ID, ""))
        self.client.set_tag(self.parent, "expspec.best_value", f"{self.search['metric']}={best.values[0]:.6g}")
        self.echo(f"best: trial #{best.number} {best.user_attrs.get(NAME, '')}: "
                  f"{self.search['metric']}={best.values[0]:.6g} (run {best.user_attrs.get(RUN_ID, '')})")

    def _end_parent(self) -> None:
        """End the parent run when the queue is drained: FINISHED when every trial index has a
        COMPLETE trial, else FAILED."""
        from optuna.trial import TrialState

        if not self.queue.drained():
            return
        complete = {t.user_attrs.get(INDEX) for t in self.queue.trials(TrialState.COMPLETE, TrialState.PRUNED)}
        missing = self.count - len(complete)
        if missing:
            self.client.set_tag(self.parent, "expspec.error", f"{missing} trial(s) did not finish")
        if self.search:
            self._best()
            from framework.search_report import report

            report(self.queue.study(), self.client, self.parent, self.search["metric"])
        self.client.set_terminated(self.parent, "FAILED" if missing else "FINISHED")
        self.echo(f"queue drained: {self.queue.counts()}; parent run {self.parent} "
                  f"{'FAILED' if missing else 'FINISHED'}")


def _progress(outcome: Any, done: int, number: int) -> str:
    from framework.sweep import progress_line

    return progress_line(outcome, done, done).replace(f"[{done}/{done}]", f"[#{number}]", 1)


def make_sampler(name: str, seed: int, number: int) -> Any:
    """The sampler of a search sweep for trial `number`: seeded with (seed, number), so that two
    workers never draw the same values from the same history (QMC: one scramble seed for all,
    its point's index comes from the storage)."""
    import optuna

    per_trial = seed * 1_000_003 + number
    if name == "random":
        return optuna.samplers.RandomSampler(seed=per_trial)
    if name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=per_trial)
    return optuna.samplers.TPESampler(seed=per_trial)


def make_pruner(name: str) -> Any:
    import optuna

    return {"median": optuna.pruners.MedianPruner, "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
            "hyperband": optuna.pruners.HyperbandPruner}.get(name, optuna.pruners.NopPruner)()


def suggest(trial: Any, key: str, dist: dict[str, Any]) -> Any:
    """Draw one `sweep.optuna.params` entry (a `framework.spec.Distribution`)."""
    kind = dist["distribution"]
    if kind == "choice":
        return trial.suggest_categorical(key, dist["values"])
    if kind == "int_uniform":
        return trial.suggest_int(key, int(dist["low"]), int(dist["high"]))
    return trial.suggest_float(key, dist["low"], dist["high"], log=kind == "log_uniform")


def pruning_callback() -> Any | None:
    """In a search trial's run whose sweep has a pruner ($EXPSPEC_OPTUNA_TRIAL set by the worker):
    a Lightning callback that reports the sweep's metric to the Optuna trial after each
    validation, and stops training when the pruner says so (the run then tests and ends
    FINISHED, tagged `expspec.pruned`; the worker records the trial PRUNED). Else None."""
    spec = os.environ.get(PRUNE_ENV)
    if not spec:
        return None
    import lightning.pytorch as pl

    config = json.loads(spec)

    class OptunaPruning(pl.Callback):
        def __init__(self) -> None:
            import optuna

            study = optuna.load_study(study_name=config["study"], storage=open_storage(config["url"]),
                                      pruner=make_pruner(config["pruner"]))
            self.trial = optuna.Trial(study, config["trial_id"])

        def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
            value = trainer.callback_metrics.get(config["metric"])
            if value is None or trainer.sanity_checking or not trainer.is_global_zero:
                return
            self.trial.report(float(value), step=trainer.global_step)
            if self.trial.should_prune():
                trainer.should_stop = True
                run_id = os.environ.get("EXPSPEC_RUN_ID")
                if run_id and trainer.logger is not None:
                    trainer.logger.experiment.set_tag(run_id, PRUNED_TAG, f"at step {trainer.global_step}: "
                                                      f"{config['metric']}={float(value):.6g}")

    return OptunaPruning()
