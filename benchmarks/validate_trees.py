"""`exp validate` and the answer to a bad override, this checkout against another (`--tree`), the
two alternating in one run: CPU seconds (user + system of the process and its children, the
forked shares of `exp validate` included) and wall seconds of fresh processes, medians. On a
machine shared with other work the wall time follows the load; the CPU time much less, so the
CPU ratio is the result.

    python benchmarks/validate_trees.py --tree /path/to/other/checkout [--runs 7] [--scale 10]

Each command is `python -c 'from framework.cli import entry; entry()' ...` with PYTHONPATH and the
working folder set to the tree, on the same files (outside both trees):
  validate  `exp validate -q --no-cache` of --scale copies of specs/ (validate_speed.py's copies)
  grid      `exp validate -q --no-cache` of a --trials grid (sweep_planning.py's spec)
  override  `exp run SPEC optimizer.lrr=0.1` (exit 2, nothing run) vs `exp validate --no-cache SPEC`
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_result import bench_line
from sweep_planning import grid_spec
from validate_speed import scaled_copies

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "from framework.cli import entry; entry()"


def timed(tree: Path, args: list[str], env: dict[str, str], expected: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh `exp` process in `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, cwd=tree,
                          env={**env, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expected:
        sys.exit(f"{tree}: `exp {' '.join(args)}` exited {done.returncode}, expected {expected}:\n{done.stderr[-2000:]}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def compiled(tree: Path) -> None:
    """Bytecode of the tree's own modules written before anything is timed (bench_result.cached_bytecode)."""
    subprocess.run([sys.executable, "-c", "import compileall, sys; [compileall.compile_dir(d, quiet=1) for d in "
                    "('framework', 'components')]; compileall.compile_file('registry.py', quiet=1)"],
                   cwd=tree, check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tree", required=True, help="the other checkout (e.g. `git worktree add /tmp/before <commit>`)")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--scale", type=int, default=10)
    p.add_argument("--trials", type=int, default=10_000)
    p.add_argument("--spec", default="specs/cvm_fairness/tiny.yaml")
    p.add_argument("--only", nargs="+", default=["validate", "grid", "override"])
    args = p.parse_args()
    trees = {"this": ROOT, "other": Path(args.tree).resolve()}
    for tree in trees.values():
        compiled(tree)
    folder = Path(tempfile.mkdtemp(prefix="expspec-trees-"))
    env = {**os.environ, "EXPSPEC_CACHE_DIR": str(folder / "cache"), "EXPSPEC_RUNS_DIR": str(folder / "runs"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"}
    copies = scaled_copies([str(ROOT / "specs")], args.scale)
    spec = str(ROOT / args.spec)
    commands = {"validate": (["validate", "-q", "--no-cache", *copies], 0),
                "grid": (["validate", "-q", "--no-cache", str(grid_spec(folder, args.trials))], 0),
                "validate one spec": (["validate", "-q", "--no-cache", spec], 0),
                "bad override": (["run", spec, "optimizer.lrr=0.1"], 2)}
    wanted = [name for name in commands if name.split()[0] in args.only or
              (name in ("validate one spec", "bad override") and "override" in args.only)]
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name in wanted:  # untimed: cold file caches
        for tree in trees.values():
            timed(tree, *commands[name][:1], env, commands[name][1])
    for run in range(args.runs):
        for name in wanted:
            for label, tree in (list(trees.items()) if run % 2 == 0 else list(trees.items())[::-1]):
                times.setdefault((name, label), []).append(timed(tree, commands[name][0], env, commands[name][1]))
    print(f"{args.runs} alternating runs each; load average at the end {os.getloadavg()}")
    print(f"{'command':28s} {'CPU this / other (median s)':>30s} {'ratio':>7s} {'wall this / other':>20s}")
    medians = {}
    for name in wanted:
        this, other = ([statistics.median(t[i] for t in times[(name, label)]) for i in (0, 1)] for label in trees)
        medians[name] = this
        print(f"{name:28s} {this[0]:14.3f} / {other[0]:<13.3f} {this[0] / other[0]:6.2f}x {this[1]:9.3f} / {other[1]:<9.3f}")
        bench_line(f"{name}: CPU seconds, this checkout vs {trees['other']}", this[0], other[0], "s")
    if "bad override" in medians:
        ratio = medians["bad override"][0] / medians["validate one spec"][0]
        print(f"bad override / validate one spec (CPU, this checkout): {ratio:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    main()
