"""What a sweep costs per trial beyond the trial's own run: warm forked trials vs a fresh process each.

Both configurations run the same sweep (tiny cvm_fairness spec, `--trials` values of lambda,
`--steps` optimizer steps each, one batch of validation and test), one job, each in a fresh
subprocess of this script with its own fresh MLflow store and cache, so nothing is shared or
skipped and the warm server's start is billed to its sweep:

  fork      `exp sweep` default: trials forked from a server that imported torch, Lightning, MLflow
            and the spec's components once (framework.trial_launchers.ForkedTrials)
  process   `exp sweep --isolate process`: `python -m framework.cli run ...` per trial

Per trial, `in run` is the MLflow run's own time (created -> terminated: build, fit, test, save);
`overhead` is the trial's wall time minus that (process start or fork, imports, spec check, store
connection, exit). The first trial is shown apart: with fork it waits for the server's imports.
Printed: per configuration the sweep's wall time, the first trial's overhead, the median overhead
of the later trials, and the ratio process / fork of that median (the cost of one more trial).
Ratios are the result; absolute times depend on the machine and its load.

    python benchmarks/sweep_overhead.py [--trials 4] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_result import bench_line, cached_bytecode  # noqa: E402


def one_sweep(isolate: str, trials: int, steps: int) -> dict:
    """Run the sweep in this process; the numbers as a dict."""
    sys.path.insert(0, str(ROOT))
    folder = Path(tempfile.mkdtemp(prefix=f"expspec-overhead-{isolate}-"))
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder / 'mlflow.db'}"
    os.environ["EXPSPEC_RUNS_DIR"] = str(folder / "runs")
    os.environ["EXPSPEC_CACHE_DIR"] = str(folder / "cache")
    weights = ", ".join(f"{w:.1f}" for w in range(trials))
    spec = folder / "sweep.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: overhead\npaper: overhead\n"
                    f"sweep:\n  grid: {{loss.terms.cvm.weight: [{weights}]}}\n")
    overrides = [f"trainer.max_steps={steps}", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]
    from mlflow.tracking import MlflowClient

    from framework.sweep import run_sweep

    client = MlflowClient(os.environ["MLFLOW_TRACKING_URI"])
    client.search_experiments()  # creates the store's tables before the clock starts
    start = time.perf_counter()
    result = run_sweep(spec, overrides, jobs=1, echo=lambda *_: None, isolate=isolate)
    total = time.perf_counter() - start
    assert not result.failed, [o.message for o in result.failed]
    in_run = []
    for outcome in result.outcomes:
        info = client.get_run(outcome.run_id).info
        in_run.append((info.end_time - info.start_time) / 1000)
    return {"total": total, "walls": [o.seconds for o in result.outcomes], "in_run": in_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--one", choices=("fork", "process"), help=argparse.SUPPRESS)  # a child run
    args = parser.parse_args()
    cached_bytecode()
    if args.one:
        print(json.dumps(one_sweep(args.one, args.trials, args.steps)))
        return
    print(f"{args.trials} trials x {args.steps} steps, 1 job, {os.cpu_count()} cores; each configuration "
          f"in a fresh process")
    rows = {}
    for isolate in ("fork", "process"):
        done = subprocess.run([sys.executable, __file__, "--one", isolate, "--trials", str(args.trials),
                               "--steps", str(args.steps)], cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{isolate} sweep failed:\n{done.stderr[-3000:]}")
        rows[isolate] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'isolate':10s} {'sweep s':>9s} {'in run s/trial':>15s} {'1st overhead s':>15s} "
          f"{'overhead s/trial (later, median)':>33s}")
    medians = {}
    for isolate, row in rows.items():
        overheads = [w - r for w, r in zip(row["walls"], row["in_run"])]
        medians[isolate] = statistics.median(overheads[1:])
        print(f"{isolate:10s} {row['total']:9.1f} {statistics.mean(row['in_run']):15.2f} {overheads[0]:15.2f} "
              f"{medians[isolate]:33.2f}")
    print(f"overhead per extra trial, process / fork: {medians['process'] / medians['fork']:.1f}x "
          f"({medians['process']:.2f} s vs {medians['fork']:.2f} s)")
    bench_line("sweep cost per extra trial beyond its own run (fork vs --isolate process)", medians["fork"],
               medians["process"], "s", "< 1 s", medians["fork"] < 1.0)


if __name__ == "__main__":
    main()
