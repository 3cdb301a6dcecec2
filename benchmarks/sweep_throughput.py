"""Throughput of `exp sweep` with 1 job vs N jobs on the same trials (default: 2 jobs).

Each configuration runs the same sweep (tiny cvm_fairness spec, `--trials` values of lambda,
`--steps` optimizer steps each) into its own fresh MLflow store and cache, so nothing is skipped.
Trials are separate processes, each with the spec's torch threads (1) capped at cores // N. Printed:
wall time per configuration, trials per minute, and the throughput ratio (N jobs / 1 job).
Ratios are the result; absolute times depend on the machine and its load. An untimed one-trial
sweep runs first so that cold imports and file caches are not billed to the first configuration.
(Before trials kept the spec's thread count, 1 job gave a trial all cores as threads, which small
models barely use; the README's 1.84x was measured then.)

    python benchmarks/sweep_throughput.py [--trials 4] [--steps 300] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed_sweep(jobs: int, trials: int, steps: int) -> float:
    from framework.sweep import run_sweep

    folder = Path(tempfile.mkdtemp(prefix=f"expspec-throughput-{jobs}-"))
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder / 'mlflow.db'}"
    os.environ["EXPSPEC_RUNS_DIR"] = str(folder / "runs")
    os.environ["EXPSPEC_CACHE_DIR"] = str(folder / "cache")
    weights = ", ".join(f"{w:.1f}" for w in range(trials))
    spec = folder / "sweep.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: throughput\npaper: throughput\n"
                    f"sweep:\n  grid: {{loss.terms.cvm.weight: [{weights}]}}\n")
    overrides = [f"trainer.max_steps={steps}"]
    from mlflow.tracking import MlflowClient

    MlflowClient(os.environ["MLFLOW_TRACKING_URI"]).search_experiments()  # creates the store's tables first
    start = time.perf_counter()
    result = run_sweep(spec, overrides, jobs=jobs, echo=lambda *_: None)
    seconds = time.perf_counter() - start
    assert not result.failed, [o.message for o in result.failed]
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    print(f"{args.trials} trials x {args.steps} steps, {os.cpu_count()} cores")
    timed_sweep(1, 1, 10)  # warm-up, untimed: first imports and file caches would bill the first configuration
    times = {jobs: timed_sweep(jobs, args.trials, args.steps) for jobs in (1, args.jobs)}
    for jobs, seconds in times.items():
        print(f"  jobs={jobs}: {seconds:7.1f} s   {60 * args.trials / seconds:6.2f} trials/min")
    print(f"throughput ratio (jobs={args.jobs} / jobs=1): {times[1] / times[args.jobs]:.2f}x")


if __name__ == "__main__":
    main()
