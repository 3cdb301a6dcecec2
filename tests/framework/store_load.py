"""The team store under load (issue 35 item 7), shared by tests/framework/test_store_load.py (8
trial processes, in CI) and benchmarks/store_load.py (32, with figures in benchmarks/README.md).

The workload is a team's: `workers` queue workers (`exp sweep SPEC --queue URL --jobs J`, each in
a working directory of its own, standing in for a machine) share one Optuna queue and one MLflow
store and run `workers x jobs` trials at once, each a process of its own that logs its metrics at
every optimizer step. `audit` then reads the store back and compares every trial's metric
history, key by key and step by step, with a reference: the same trials run one at a time
into a local sqlite store. So "nothing lost" means every (key, step) the reference logged is in
the store with the same value, and nothing else is.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"


def sweep_spec(folder: Path, trials: int, steps: int, paper: str) -> Path:
    """A sweep of `trials` seeds of the tiny cvm spec, `steps` optimizer steps each, every step
    logged (Lightning's `log_every_n_steps: 1`), validation and test on one batch."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "load.yaml"
    path.write_text(f"extends: {TINY}\nname: store-load\npaper: {paper}\n"
                    f"trainer: {{max_steps: {steps}, log_every_n_steps: 1, limit_val_batches: 1, limit_test_batches: 1,"
                    f" check_val_every_n_epoch: 1000}}\n"
                    f"sweep:\n  grid: {{seed: {list(range(trials))}}}\n")
    return path


def start_worker(spec: Path, queue: str, tracking_uri: str, home: Path, jobs: int,
                 env: dict[str, str] | None = None) -> subprocess.Popen:
    """One queue worker in `home` (its own cache and Lightning folders), in a process group of
    its own so that it and its trials can be stopped together by its pid."""
    home.mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("EXPSPEC_PARENT_RUN_ID", "EXPSPEC_RUN_ID", "EXPSPEC_RUN_TAGS", "EXPSPEC_RUN_NAME")}
    environment.update({"MLFLOW_TRACKING_URI": tracking_uri, "EXPSPEC_CACHE_DIR": str(home / "cache"),
                        "EXPSPEC_RUNS_DIR": str(home / "runs"),
                        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **(env or {})})
    log = open(home / "worker.log", "w")
    return subprocess.Popen([sys.executable, "-m", "framework.cli", "sweep", str(spec), "--queue", queue,
                             "--jobs", str(jobs)], cwd=home, env=environment, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(processes: list[subprocess.Popen], timeout: float) -> list[int]:
    """Wait for every worker; a worker still running at the deadline is killed with its trials
    (and reported as -9)."""
    deadline = time.monotonic() + timeout
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            codes.append(process.wait())
    return codes


@dataclasses.dataclass
class Audit:
    """What the store holds after a load run, against the reference."""

    trials: int = 0  # trials the sweep has
    finished: int = 0  # trial runs FINISHED
    not_ended: list[str] = dataclasses.field(default_factory=list)  # run ids left RUNNING (any run of the experiment)
    twice: list[str] = dataclasses.field(default_factory=list)  # seeds with more than one run, or runs of no seed
    lost: list[str] = dataclasses.field(default_factory=list)  # "seed=S key@step" the reference has, the store not
    extra: list[str] = dataclasses.field(default_factory=list)  # ... the store has, the reference not
    changed: list[str] = dataclasses.field(default_factory=list)  # same (key, step), another value
    points: int = 0  # (key, step) values read back

    @property
    def ok(self) -> bool:
        return (self.finished == self.trials and not self.not_ended and not self.twice and not self.lost
                and not self.extra and not self.changed)

    def summary(self) -> str:
        return (f"{self.finished}/{self.trials} trials finished, {self.points} metric values read back; "
                f"left RUNNING {self.not_ended or 'none'}; run twice {self.twice or 'none'}; "
                f"lost {self.lost[:5] or 'none'}{' ...' if len(self.lost) > 5 else ''}; "
                f"extra {self.extra[:5] or 'none'}; changed {self.changed[:5] or 'none'}")


def histories(tracking_uri: str, paper: str) -> tuple[dict[str, list[dict[tuple[str, int], float]]], list[str], int]:
    """Per seed, the metric histories ((key, step) -> value) of the sweep's trial runs in the
    experiment `paper`; the run ids of its runs not ended; how many FINISHED trial runs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(paper)
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    not_ended = [r.info.run_id for r in runs if r.info.status == "RUNNING"]
    by_seed: dict[str, list[dict[tuple[str, int], float]]] = {}
    finished = 0
    for run in runs:
        if "mlflow.parentRunId" not in run.data.tags:
            continue  # the sweep's parent run
        finished += run.info.status == "FINISHED"
        history = {}
        for key in run.data.metrics:
            if key.startswith("system/"):
                continue  # sampled by a clock, not logged by training
            for metric in client.get_metric_history(run.info.run_id, key):
                history[(key, metric.step)] = metric.value
        # a trial that failed before its params were written is still a run of the sweep
        by_seed.setdefault(run.data.params.get("seed", f"unknown ({run.info.run_id})"), []).append(history)
    return by_seed, not_ended, finished


def audit(tracking_uri: str, paper: str, reference_uri: str, reference_paper: str, trials: int) -> Audit:
    """Compare the store's trial runs with the reference's, seed by seed (see the module docstring)."""
    found, not_ended, finished = histories(tracking_uri, paper)
    expected, _, _ = histories(reference_uri, reference_paper)
    result = Audit(trials=trials, finished=finished, not_ended=not_ended)
    result.twice += [seed for seed in found if seed not in expected]  # runs the reference has no seed for
    for seed in sorted(expected, key=int):
        runs = found.get(seed, [])
        if len(runs) > 1:
            result.twice.append(seed)
        have = runs[0] if runs else {}
        result.points += len(have)
        want = expected[seed][0]
        result.lost += [f"seed={seed} {k}@{s}" for (k, s) in want.keys() - have.keys()]
        result.extra += [f"seed={seed} {k}@{s}" for (k, s) in have.keys() - want.keys()]
        result.changed += [f"seed={seed} {k}@{s}: {want[k, s]} vs {have[k, s]}"
                           for (k, s) in want.keys() & have.keys() if want[k, s] != have[k, s]]
    return result


def run_load(spec: Path, queue: str, tracking_uri: str, folder: Path, workers: int, jobs: int,
             timeout: float, during: Callable[[], None] | None = None,
             env: dict[str, str] | None = None) -> tuple[list[int], float]:
    """Start `workers` queue workers with `jobs` trials each, call `during()` (e.g. restart the
    server) while they run, wait for them; returns their exit codes and the wall time."""
    start = time.monotonic()
    processes = [start_worker(spec, queue, tracking_uri, folder / f"machine{i}", jobs, env) for i in range(workers)]
    try:
        if during is not None:
            during()
        codes = finish(processes, timeout)
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    return codes, time.monotonic() - start


def wait_until_running(tracking_uri: str, paper: str, trials: int, timeout: float = 600) -> int:
    """Wait until each of the sweep's `trials` trial runs has logged a metric; returns how many
    of them are still RUNNING then (the ones a server restart at that moment interrupts)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        experiment = client.get_experiment_by_name(paper)
        if experiment is not None:
            runs = [r for r in client.search_runs([experiment.experiment_id], max_results=1000)
                    if "mlflow.parentRunId" in r.data.tags and r.data.metrics]
            if len(runs) >= trials:
                return sum(r.info.status == "RUNNING" for r in runs)
        time.sleep(1)
    raise RuntimeError(f"{trials} trials had not logged a metric after {timeout:.0f} s")


def worker_logs(folder: Path) -> str:
    return "\n".join(f"--- {log}\n{log.read_text()[-3000:]}" for log in sorted(folder.glob("machine*/worker.log")))
