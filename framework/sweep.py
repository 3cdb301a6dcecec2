"""`exp sweep`: run a spec's trials in separate processes under one MLflow parent run.

- Every trial is validated before the first one starts.
- `--jobs N` runs N trials at a time; the cores are split between them (`hardware.threads` =
  cores // N per trial), since on small machines oversubscribed threads are far slower.
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
from framework.plan import Trial, expand_sweep

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
    """Trials, their hashes, and the base operative spec; every trial validated first."""
    from framework.runner import plan_hash, prepare

    loaded = load_spec(spec_path, overrides)
    trials = expand_sweep(loaded)
    if not trials:
        raise SpecError([Problem(loaded.value_mark(()), ("sweep",), "this spec has no 'sweep:' section; use `exp run`")])
    hashes, problems = [], []
    for trial in trials:
        try:
            units = prepare(spec_path, [*overrides, *trial.overrides])
            hashes.append(plan_hash(units, spec_path))
        except SpecError as error:
            problems += [Problem(p.mark, p.path, f"{p.message} [trial {trial.name}]") for p in error.problems]
    if problems:
        raise SpecError(problems)
    base = prepare(spec_path, [*overrides, "sweep=null"])[0].operative
    return trials, hashes, base


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
    import hashlib

    from framework.tracking import Tracker

    overrides = list(overrides or [])
    trials, hashes, base = plan_trials(spec_path, overrides)
    threads = max(1, (cores or os.cpu_count() or 1) // max(1, jobs))
    sweep_hash = hashlib.sha256("|".join(hashes).encode()).hexdigest()[:16]
    tracker = Tracker({**base, "name": f"{base['name']} sweep"}, str(spec_path), sweep_hash, overrides,
                      extra_tags={"expspec.sweep": "true", "expspec.sweep_hash": sweep_hash,
                                  "expspec.trials": str(len(trials))})
    experiment_id = tracker._experiment_id(base["paper"])
    earlier = tracker.client.search_runs(
        [experiment_id], filter_string=f"tags.`expspec.sweep_hash` = '{sweep_hash}'", max_results=1)
    parent = tracker.attach(earlier[0].info.run_id) if earlier else tracker.start(log_params=False)
    done = _finished_hashes(tracker.client, experiment_id)

    outcomes: dict[int, TrialOutcome] = {}
    todo = []
    for i, (trial, h) in enumerate(zip(trials, hashes)):
        if h in done:
            outcomes[i] = TrialOutcome(trial, SKIPPED, run_id=done[h], message=f"finished run {done[h][:8]} has hash {h}")
            echo(f"[skip] {trial.name}: already finished (run {done[h][:8]}, same spec hash)")
        else:
            todo.append(i)
    echo(f"sweep {base['name']}: {len(trials)} trial(s), {len(todo)} to run, {jobs} job(s) x {threads} thread(s); "
         f"parent run {parent}")

    workdir = Path(tempfile.mkdtemp(prefix="expspec-sweep-"))
    processes: dict[int, subprocess.Popen] = {}
    stop = False

    def launch(i: int) -> TrialOutcome:
        trial = trials[i]
        result_file = workdir / f"{i}.json"
        log_file = workdir / f"{i}.log"
        env = {**os.environ, "EXPSPEC_PARENT_RUN_ID": parent, "EXPSPEC_RESULT_FILE": str(result_file),
               "EXPSPEC_RUN_NAME": f"{base['name']}[{trial.name}]"}
        env.pop("EXPSPEC_RUN_ID", None)
        command = [sys.executable, "-m", "framework.cli", "run", str(spec_path), *overrides, *trial.overrides,
                   f"hardware.threads={threads}"]
        start = time.perf_counter()
        with open(log_file, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            processes[i] = process
            code = process.wait()
        seconds = time.perf_counter() - start
        if code == 0 and result_file.is_file():
            data = json.loads(result_file.read_text())
            return TrialOutcome(trial, FINISHED, data["run_id"], data["metrics"], seconds)
        lines = [l for l in log_file.read_text().splitlines() if l.strip()]
        status = KILLED if code in (-signal.SIGTERM, 130, 143) else FAILED
        return TrialOutcome(trial, status, None, {}, seconds, lines[-1] if lines else f"exit code {code}")

    failures = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending: dict[Future, int] = {}
        queue = list(todo)
        while queue or pending:
            while queue and len(pending) < jobs and not stop:
                i = queue.pop(0)
                pending[pool.submit(launch, i)] = i
            if not pending:
                break
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                i = pending.pop(future)
                outcome = future.result()
                outcomes[i] = outcome
                n = len(outcomes)
                if outcome.status == FINISHED:
                    shown = ", ".join(f"{k}={v:.4g}" for k, v in sorted(outcome.metrics.items()) if k.startswith("test/"))
                    echo(f"[{n}/{len(trials)}] {outcome.trial.name}: finished in {outcome.seconds:.1f}s  {shown}")
                else:
                    failures += 1
                    echo(f"[{n}/{len(trials)}] {outcome.trial.name}: {outcome.status} after {outcome.seconds:.1f}s: "
                         f"{outcome.message}")
                    if fail_fast and not stop:
                        stop = True
                        echo("--fail-fast: stopping the running trials and launching no more")
                        for j, process in processes.items():
                            if process.poll() is None:
                                process.send_signal(signal.SIGTERM)
        for i in queue:
            outcomes[i] = TrialOutcome(trials[i], "NOT RUN", message="not launched after a failure (--fail-fast)")

    result = SweepResult(parent, [outcomes[i] for i in sorted(outcomes)])
    echo(summary(result))
    if result.failed:
        tracker.client.set_tag(parent, "expspec.error", f"{len(result.failed)} trial(s) did not finish")
        tracker.client.set_terminated(parent, "FAILED")
    else:
        tracker.finish()
    return result


def summary(result: SweepResult) -> str:
    counts: dict[str, int] = {}
    for outcome in result.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    lines = ["summary: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for outcome in result.failed:
        lines.append(f"  {outcome.status:8s} {outcome.trial.name}: {outcome.message}")
    return "\n".join(lines)
