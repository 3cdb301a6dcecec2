"""`exp sweep`: run a spec's trials in separate processes under one MLflow parent run.

- Every trial is validated before the first one starts, in one pass over the parsed spec and
  without importing torch (`framework.plan.SweepChecker`); a sweep has at most
  `framework.plan.MAX_TRIALS` trials.
- Each trial is a process of its own, so a crashed or killed trial ends only itself. By default
  (`--isolate fork`) it is forked from a warm server that imported torch, Lightning, MLflow and
  the sweep's components once (`ForkedTrials`): the seconds those imports take are paid once per
  sweep, not once per trial. `--isolate process` starts a fresh interpreter per trial
  (`TrialProcesses`). Both run the same `exp run` code with the same arguments and give the same
  numbers.
- `--jobs N` runs N trials at a time; a trial runs with the spec's `hardware.threads` (default 1),
  capped at cores // N, since on small machines oversubscribed threads are far slower. Trials do
  not take more threads than the spec says when fewer jobs run: a trial's numbers then do not
  depend on `--jobs` (float reductions differ with the thread count). A `hardware.threads` the
  user's overrides (or the sweep's axes) set is used as given.
- A trial whose operative-spec hash already has a FINISHED run in the experiment is skipped
  (resume), and the sweep says so; the parent run of an earlier invocation of the same sweep is
  reused, so all trials stay under one parent. A skipped trial whose run is not a child of this
  parent (a plain `exp run`, another sweep's trial) is linked into it: a FINISHED child run
  holding a copy of that run's params, metric histories and tags, tagged `expspec.linked_from`
  with the original's id (an MLflow run has one parent, so the original stays where it is). The
  parent then covers the whole grid: `exp compare PARENT`, its table, its plot, the MLflow UI.
- Trials are named by what they vary (`weight=3.0`): the Run Name column of the MLflow UI shows
  about 15 characters, and the parent run names the spec.
- Trials' result and log files live in a temporary folder, removed when the sweep ends.
- Failures are reported as they happen and summarized at the end; `--fail-fast` stops launching
  trials after the first failure and stops the running ones (marked KILLED). Ctrl-C or SIGTERM
  stops the running trials too, and marks the parent run KILLED.
"""

from __future__ import annotations

import shutil
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from framework.plan import Trial
from framework.sweep_plan import SweepPlan, sets_threads, trial_threads
from framework.sweep_runs import link_skipped, open_parent, skip_finished, upload_trial_logs
from framework.trial_launchers import (FINISHED, ISOLATIONS, SKIPPED, ForkedTrials, TrialLauncher, TrialOutcome,
                                       TrialProcesses, component_modules, warm_context)


@dataclass
class SweepResult:
    parent_run_id: str | None
    outcomes: list[TrialOutcome]

    @property
    def failed(self) -> list[TrialOutcome]:
        return [o for o in self.outcomes if o.status not in (FINISHED, SKIPPED)]


def run_sweep(
    spec_path: str | Path,
    overrides: list[str] | None = None,
    jobs: int = 1,
    fail_fast: bool = False,
    cores: int | None = None,
    echo: Any = print,
    isolate: str = "fork",
    fresh: bool = False,
) -> SweepResult:
    """Run the spec's trials, `jobs` at a time, as child runs of one parent run (see the module
    docstring). The parent ends FINISHED when every trial finished or was skipped, else FAILED;
    KILLED, with the running trials stopped, when this process is interrupted (Ctrl-C, SIGTERM).
    `fresh`: run every trial, also those that finished before (`exp reproduce --fresh`)."""
    from framework.runner import ended_on_error

    overrides = list(overrides or [])
    if isolate not in ISOLATIONS:
        raise ValueError(f"isolate must be one of {', '.join(ISOLATIONS)}, got {isolate!r}")
    plan = SweepPlan(spec_path, overrides)
    if plan.optuna:  # a search: its trials are drawn as they are taken, through a local queue
        return search_locally(spec_path, overrides, jobs, isolate, echo)
    trials, hashes, base = plan.trials, plan.hashes, plan.base
    preload = component_modules(base)
    if isolate == "fork":
        warm_context(preload)  # the server imports while the parent run is opened
    threads = trial_threads(base, overrides, jobs, cores)
    tracker, done = open_parent(spec_path, overrides, base, hashes)
    done = {} if fresh else done
    parent = tracker.run_id
    with ended_on_error(tracker):  # Ctrl-C or SIGTERM, at any point: the parent run ends KILLED
        outcomes, todo = skip_finished(trials, hashes, done, echo)
        given = " (as given)" if sets_threads(overrides) else ""
        echo(f"sweep {base['name']}: {len(trials)} trial(s), {len(todo)} to run, {jobs} job(s) x {threads} "
             f"thread(s){given}; parent run {parent}")
        link_skipped(tracker.client, parent, outcomes, echo)
        launcher = ForkedTrials(spec_path, overrides, parent, base["name"], threads, preload) if isolate == "fork" \
            else TrialProcesses(spec_path, overrides, parent, base["name"], threads)
        try:
            _run_pool(launcher, [(i, trials[i]) for i in todo], jobs, fail_fast, outcomes, len(trials), echo)
        finally:  # after Ctrl-C or SIGTERM too: _run_pool stopped the trials
            upload_trial_logs(tracker.client, parent, launcher.workdir, trials, echo)
            shutil.rmtree(launcher.workdir, ignore_errors=True)
        result = SweepResult(parent, [outcomes[i] for i in sorted(outcomes)])
        echo(summary(result))
        echo(f"compare: exp compare {parent}   browse: exp ui   (store {tracker.uri})")
        if result.failed:
            tracker.client.set_tag(parent, "expspec.error", f"{len(result.failed)} trial(s) did not finish")
    if result.failed:
        tracker.client.set_terminated(parent, "FAILED")
    else:
        tracker.finish()
    return result


def search_locally(spec_path: str | Path, overrides: list[str], jobs: int, isolate: str, echo: Any) -> SweepResult:
    """`exp sweep` of an `optuna:` search without `--queue`: one worker on a journal file beside
    the result cache (`.expspec/optuna.journal`), so a second invocation continues the same study."""
    from framework.queue_worker import Worker
    from framework.result_cache import cache_dir

    queue = f"journal:{(cache_dir().parent / 'optuna.journal').resolve()}"
    report = Worker(spec_path, overrides, queue, jobs=jobs, isolate=isolate, echo=echo).run()
    return SweepResult(report.parent_run_id, report.outcomes)


def _run_pool(processes: TrialLauncher, todo: list[tuple[int, Trial]], jobs: int, fail_fast: bool,
              outcomes: dict[int, TrialOutcome], total: int, echo: Any) -> None:
    """Run the trials `jobs` at a time, in order, adding each outcome (by trial index) as it
    arrives. With `fail_fast`, the first failure stops the running trials and launches no more;
    those never launched get the status NOT RUN."""
    queue = list(todo)
    stopping = False
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, _stopped_on_interrupt(processes):
        pending: dict[Future, int] = {}
        while queue or pending:
            while queue and len(pending) < jobs and not stopping:
                i, trial = queue.pop(0)
                pending[pool.submit(processes.run, i, trial)] = i
            if not pending:
                break
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                outcome = future.result()
                outcomes[pending.pop(future)] = outcome
                echo(progress_line(outcome, len(outcomes), total))
                if outcome.status != FINISHED and fail_fast and not stopping:
                    stopping = True
                    echo("--fail-fast: stopping the running trials and launching no more")
                    processes.stop()
    for i, trial in queue:
        outcomes[i] = TrialOutcome(trial, "NOT RUN", message="not launched after a failure (--fail-fast)")


@contextmanager
def _stopped_on_interrupt(processes: TrialLauncher) -> Iterator[None]:
    """Ctrl-C or SIGTERM in the sweep's process stops the running trials (each marks its run
    KILLED) before the pool waits for them."""
    try:
        yield
    except BaseException:
        processes.stop()
        raise


def progress_line(outcome: TrialOutcome, done: int, total: int) -> str:
    if outcome.status == FINISHED:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in sorted(outcome.metrics.items()) if k.startswith("test/"))
        return f"[{done}/{total}] {outcome.trial.name}: finished in {outcome.seconds:.1f}s  {shown}"
    return f"[{done}/{total}] {outcome.trial.name}: {outcome.status} after {outcome.seconds:.1f}s: {outcome.message}"


def summary(result: SweepResult) -> str:
    counts: dict[str, int] = {}
    for outcome in result.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    lines = ["summary: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for outcome in result.failed:
        lines.append(f"  {outcome.status:8s} {outcome.trial.name}: {outcome.message}")
    return "\n".join(lines)
