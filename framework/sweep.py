"""`exp sweep`: run a spec's trials in separate processes under one MLflow parent run.

- Every trial is validated before the first one starts.
- `--jobs N` runs N trials at a time; a trial runs with the spec's `hardware.threads` (default 1),
  capped at cores // N, since on small machines oversubscribed threads are far slower. Trials do
  not take more threads than the spec says when fewer jobs run: a trial's numbers then do not
  depend on `--jobs` (float reductions differ with the thread count).
- A trial whose operative-spec hash already has a FINISHED run in the experiment is skipped
  (resume), and the sweep says so; the parent run of an earlier invocation of the same sweep is
  reused, so all trials stay under one parent.
- Failures are reported as they happen and summarized at the end; `--fail-fast` stops launching
  trials after the first failure and stops the running ones (marked KILLED).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.errors import Problem, SpecError
from framework.loader import load_spec
from framework.plan import SweepChecker, Trial, validate_plan

FINISHED, FAILED, SKIPPED, KILLED = "FINISHED", "FAILED", "SKIPPED", "KILLED"


@dataclass
class TrialOutcome:
    trial: Trial
    status: str
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    message: str = ""


@dataclass
class SweepResult:
    parent_run_id: str | None
    outcomes: list[TrialOutcome]

    @property
    def failed(self) -> list[TrialOutcome]:
        return [o for o in self.outcomes if o.status not in (FINISHED, SKIPPED)]


def plan_trials(spec_path: str | Path, overrides: list[str]) -> tuple[list[Trial], list[str], dict[str, Any]]:
    """Trials, their hashes, and the base operative spec; every trial validated first, in one pass
    against the committed schema (`framework.plan.SweepChecker`; no torch import). The hashes are
    the ones each trial's `exp run` computes from live signatures, as long as the committed schema
    is current (a test checks it is); an `init: {spec}` upstream is hashed once per overrides."""
    from framework.runner import plan_hash
    from framework.schema import CommittedSchemas

    checker = SweepChecker(spec_path, overrides, CommittedSchemas(live_fallback=True))
    if not checker.trials:
        mark = checker.unresolved.value_mark(())
        raise SpecError([Problem(mark, ("sweep",), "this spec has no 'sweep:' section; use `exp run`")])
    upstreams: dict[tuple[Path, tuple[str, ...]], str] = {}

    def upstream_hash(other: Path, init_overrides: list[str]) -> str:
        key = (other.resolve(), tuple(init_overrides))
        if key not in upstreams:
            units = validate_plan(load_spec(other, init_overrides), checker.schemas, checker.cache)
            upstreams[key] = plan_hash(units, other, upstream_hash)
        return upstreams[key]

    hashes: list[str] = []
    problems = checker.check(lambda units: hashes.append(plan_hash(units, spec_path, upstream_hash)))
    if problems:
        raise SpecError(problems)
    return checker.trials, hashes, checker.base[0].operative


def _finished_hashes(client: Any, experiment_id: str) -> dict[str, str]:
    runs = client.search_runs([experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=5000)
    return {r.data.tags["expspec.spec_hash"]: r.info.run_id for r in runs if "expspec.spec_hash" in r.data.tags}


def run_sweep(
    spec_path: str | Path,
    overrides: list[str] | None = None,
    jobs: int = 1,
    fail_fast: bool = False,
    cores: int | None = None,
    echo: Any = print,
) -> SweepResult:
    """Run the spec's trials, `jobs` at a time, as child runs of one parent run (see the module
    docstring). The parent ends FINISHED when every trial finished or was skipped, else FAILED."""
    overrides = list(overrides or [])
    trials, hashes, base = plan_trials(spec_path, overrides)
    threads = min(base["hardware"]["threads"], max(1, (cores or os.cpu_count() or 1) // max(1, jobs)))
    tracker, done = _open_parent(spec_path, overrides, base, hashes)
    parent = tracker.run_id
    outcomes, todo = _skip_finished(trials, hashes, done, echo)
    echo(f"sweep {base['name']}: {len(trials)} trial(s), {len(todo)} to run, {jobs} job(s) x {threads} thread(s); "
         f"parent run {parent}")
    processes = TrialProcesses(spec_path, overrides, parent, base["name"], threads)
    _run_pool(processes, [(i, trials[i]) for i in todo], jobs, fail_fast, outcomes, len(trials), echo)
    result = SweepResult(parent, [outcomes[i] for i in sorted(outcomes)])
    echo(summary(result))
    if result.failed:
        tracker.client.set_tag(parent, "expspec.error", f"{len(result.failed)} trial(s) did not finish")
        tracker.client.set_terminated(parent, "FAILED")
    else:
        tracker.finish()
    return result


def _open_parent(spec_path: str | Path, overrides: list[str], base: dict[str, Any],
                 hashes: list[str]) -> tuple[Any, dict[str, str]]:
    """(the parent run's tracker, spec hash -> id of a FINISHED run in the experiment). The parent
    run of an earlier invocation of the same sweep (same trial hashes) is reopened, not duplicated."""
    import hashlib

    from framework.tracking import Tracker, experiment_id

    sweep_hash = hashlib.sha256("|".join(hashes).encode()).hexdigest()[:16]
    tracker = Tracker({**base, "name": f"{base['name']} sweep"}, str(spec_path), sweep_hash, overrides,
                      extra_tags={"expspec.sweep": "true", "expspec.sweep_hash": sweep_hash,
                                  "expspec.trials": str(len(hashes))})
    experiment = experiment_id(tracker.client, base["paper"])
    earlier = tracker.client.search_runs(
        [experiment], filter_string=f"tags.`expspec.sweep_hash` = '{sweep_hash}'", max_results=1)
    if earlier:
        tracker.attach(earlier[0].info.run_id)
    else:
        tracker.start(log_params=False)
    return tracker, _finished_hashes(tracker.client, experiment)


def _skip_finished(trials: list[Trial], hashes: list[str], done: dict[str, str],
                   echo: Any) -> tuple[dict[int, TrialOutcome], list[int]]:
    """(SKIPPED outcomes by trial index, indices of the trials still to run)."""
    outcomes: dict[int, TrialOutcome] = {}
    todo = []
    for i, (trial, h) in enumerate(zip(trials, hashes)):
        if h in done:
            outcomes[i] = TrialOutcome(trial, SKIPPED, run_id=done[h], message=f"finished run {done[h][:8]} has hash {h}")
            echo(f"[skip] {trial.name}: already finished (run {done[h][:8]}, same spec hash)")
        else:
            todo.append(i)
    return outcomes, todo


class TrialProcesses:
    """Each trial is `exp run SPEC OVERRIDES... hardware.threads=N` in a child process, a child run
    of the parent (through $EXPSPEC_PARENT_RUN_ID); it reports its result in a JSON file and its
    output goes to a log file, whose last line is the message of a failed trial."""

    def __init__(self, spec_path: str | Path, overrides: list[str], parent_run_id: str, name: str,
                 threads: int) -> None:
        self.spec_path, self.overrides, self.parent_run_id = spec_path, overrides, parent_run_id
        self.name, self.threads = name, threads
        self.workdir = Path(tempfile.mkdtemp(prefix="expspec-sweep-"))
        self.running: dict[int, subprocess.Popen] = {}

    def run(self, i: int, trial: Trial) -> TrialOutcome:
        """Run trial `i` to its end (called from a worker thread)."""
        result_file, log_file = self.workdir / f"{i}.json", self.workdir / f"{i}.log"
        env = {**os.environ, "EXPSPEC_PARENT_RUN_ID": self.parent_run_id, "EXPSPEC_RESULT_FILE": str(result_file),
               "EXPSPEC_RUN_NAME": f"{self.name}[{trial.name}]"}
        env.pop("EXPSPEC_RUN_ID", None)
        command = [sys.executable, "-m", "framework.cli", "run", str(self.spec_path), *self.overrides,
                   *trial.overrides, f"hardware.threads={self.threads}"]
        start = time.perf_counter()
        with open(log_file, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            self.running[i] = process
            code = process.wait()
        seconds = time.perf_counter() - start
        if code == 0 and result_file.is_file():
            data = json.loads(result_file.read_text())
            return TrialOutcome(trial, FINISHED, data["run_id"], data["metrics"], seconds)
        lines = [line for line in log_file.read_text().splitlines() if line.strip()]
        status = KILLED if code in (-signal.SIGTERM, 130, 143) else FAILED
        return TrialOutcome(trial, status, None, {}, seconds, lines[-1] if lines else f"exit code {code}")

    def stop(self) -> None:
        """SIGTERM every trial still running: each marks its run KILLED (see framework.cli)."""
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)


def _run_pool(processes: TrialProcesses, todo: list[tuple[int, Trial]], jobs: int, fail_fast: bool,
              outcomes: dict[int, TrialOutcome], total: int, echo: Any) -> None:
    """Run the trials `jobs` at a time, in order, adding each outcome (by trial index) as it
    arrives. With `fail_fast`, the first failure stops the running trials and launches no more;
    those never launched get the status NOT RUN."""
    queue = list(todo)
    stopping = False
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
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
                echo(_progress_line(outcome, len(outcomes), total))
                if outcome.status != FINISHED and fail_fast and not stopping:
                    stopping = True
                    echo("--fail-fast: stopping the running trials and launching no more")
                    processes.stop()
    for i, trial in queue:
        outcomes[i] = TrialOutcome(trial, "NOT RUN", message="not launched after a failure (--fail-fast)")


def _progress_line(outcome: TrialOutcome, done: int, total: int) -> str:
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
