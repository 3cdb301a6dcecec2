"""One `exp sweep SPEC --queue STORAGE_URL` process: a worker that takes trials from the sweep's
queue (framework/queue.py, whose docstring states the protocol) and runs them as `exp sweep` runs
its trials (framework/trial_launchers.py). `exp sweep` of an `optuna:` search without `--queue`
is one such worker on a local journal file (`framework.sweep.search_locally`)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.errors import SpecError, UsageError
from framework.plan import Trial, named_trial
from framework.queue import INDEX, NAME, RUN_ID, Lease, Queue, worker_id
from framework.search import PRUNED_TAG, make_sampler, suggest
from framework.sweep import SweepResult, progress_line, summary
from framework.sweep_plan import SweepPlan, sweep_hash_of, trial_threads
from framework.sweep_runs import link_skipped, open_parent
from framework.trial_launchers import (FAILED, FINISHED, KILLED, SKIPPED, ForkedTrials, TrialOutcome, TrialProcesses,
                                       component_modules, warm_context)


@dataclass
class WorkerReport:
    """What one worker did: its outcomes (as `exp sweep` reports them) and why it stopped."""

    parent_run_id: str
    outcomes: list[Any] = field(default_factory=list)
    stopped_early: str = ""


class Worker:
    """One `exp sweep SPEC --queue URL` process: takes trials from the queue, `jobs` at a time,
    until the queue is drained, it has failed `max_failures` trials in a row, or it is stopped
    (see the module docstring). Trials run as `exp sweep` runs them (framework/trial_launchers.py)."""

    def __init__(self, spec_path: str | Path, overrides: list[str], url: str, jobs: int = 1, lease: float = 60.0,
                 max_failures: int = 3, isolate: str = "fork", echo: Any = print, cores: int | None = None) -> None:
        from framework.tracking import client

        if max_failures < 1:
            raise UsageError(f"--max-failures must be >= 1, got {max_failures}")
        self.spec_path, self.overrides, self.jobs, self.echo = spec_path, list(overrides), max(1, jobs), echo
        self.max_failures = max_failures
        self.plan = SweepPlan(spec_path, self.overrides)
        self.trials, self.hashes, self.base, self.search = self.plan.trials, self.plan.hashes, self.plan.base, self.plan.optuna
        identity = [*self.hashes, json.dumps(self.search, sort_keys=True)] if self.search else self.hashes
        self.queue = Queue(url, f"expspec-{self.base['paper']}-{sweep_hash_of(identity)}", lease,
                           direction=self.search["direction"] if self.search else "minimize")
        self.count = self.search["trials"] if self.search else len(self.trials)
        self.client = client(self.base["tracking"]["uri"])
        self.preload = component_modules(self.base)
        if isolate == "fork":
            warm_context(self.preload)  # imports while the queue is opened
        if self.queue.created:
            tracker, _ = open_parent(spec_path, self.overrides, self.base, self.hashes,
                                     self.search["metric"] if self.search else None)
            # the parent outlives this worker: never an orphan for `Tracker.reap_orphans` to close
            self.client.delete_tag(tracker.run_id, "expspec.pid")
            self.queue.enqueue(self.count, [] if self.search else [t.name for t in self.trials], tracker.run_id)
        self.parent = self.queue.wait_ready()
        self.experiment = self.client.get_run(self.parent).info.experiment_id
        threads = trial_threads(self.base, self.overrides, self.jobs, cores)
        args = (spec_path, self.overrides, self.parent, self.base["name"], threads)
        self.launcher = ForkedTrials(*args, self.preload) if isolate == "fork" else TrialProcesses(*args)
        self.report = WorkerReport(self.parent)
        self.lock = threading.Lock()
        self.failures_in_a_row = 0
        self.interrupted = False
        echo(f"worker {worker_id()}: sweep {self.base['name']}, {self.count} trial(s) in study "
             f"{self.queue.name} ({url}), {self.jobs} job(s) x {threads} thread(s); parent run {self.parent}")

    def run(self) -> WorkerReport:
        """Work until done (see the class docstring); the parent run ended when the queue drained."""
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
        self.echo(summary(SweepResult(self.parent, self.report.outcomes)))
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
        told: dict[str, Any] = {"run_tags": {k: str(v) for k, v in tags.items()}}
        if self.search and self.search["pruner"] != "none":
            told["optuna_trial"] = json.dumps({"url": self.queue.url, "study": self.queue.name,
                                               "trial_id": taken._trial_id, "metric": self.search["metric"],
                                               "pruner": self.search["pruner"]})
        lease = Lease(self.queue, taken._trial_id, lambda: self._stop_trial(taken.number))
        lease.start()
        try:
            outcome = self.launcher.run(taken.number, trial, told)
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
    return progress_line(outcome, done, done).replace(f"[{done}/{done}]", f"[#{number}]", 1)
