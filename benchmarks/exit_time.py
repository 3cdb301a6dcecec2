"""Time from the last line `exp run` prints to process exit: the `exp` entry point (`gc.freeze()`
after the command) vs `main` alone (the interpreter's tear-down collects torch's object graph),
the same tiny run in the same script, each in a fresh process and store.

    python benchmarks/exit_time.py [--repeat 3] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs/cvm_fairness/tiny.yaml"
ENTRY = "from framework.cli import entry; entry()"
MAIN_ONLY = "import sys; from framework.cli import main; sys.exit(main())"


def tail_seconds(code: str, steps: int, seed: int, store: Path) -> float:
    """Seconds between the process's last line of output and its exit."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{store / 'mlflow.db'}", "PYTHONUNBUFFERED": "1",
           "EXPSPEC_RUNS_DIR": str(store / "runs"), "EXPSPEC_CACHE_DIR": str(store / "cache"),
           "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", code, "run", str(SPEC), f"trainer.max_steps={steps}", f"seed={seed}"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    last = time.perf_counter()
    for _ in process.stdout:  # type: ignore[union-attr]
        last = time.perf_counter()
    process.wait()
    if process.returncode:
        raise RuntimeError(f"exp run failed with exit code {process.returncode}")
    return time.perf_counter() - last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder)
        tail_seconds(ENTRY, args.steps, 99, store)  # untimed: the store's creation, cold file caches
        rows = {}
        for label, code in (("exp entry (gc.freeze)", ENTRY), ("main alone (tear-down)", MAIN_ONLY)):
            rows[label] = [tail_seconds(code, args.steps, seed, store) for seed in range(args.repeat)]
    for label, values in rows.items():
        print(f"{label:26s} last output -> exit: median {statistics.median(values):.2f} s  {['%.2f' % v for v in values]}")
    entry, plain = (statistics.median(v) for v in rows.values())
    print(f"ratio main alone / entry: {plain / entry:.1f}x")


if __name__ == "__main__":
    main()
