"""How long does a big sweep take to validate and plan, and what does one-pass planning save?

A grid over tiny cvm_fairness (`optimizer.lr` x `loss.terms.cvm.weight`, side x side trials):

  validate   `exp validate -q --no-cache GRID` in a fresh subprocess (imports included), best of
             --runs: every trial checked (with the validate cache, every run after the first would
             reuse the cached result and check nothing).
  plan       framework.sweep_plan.plan_trials(GRID) in a fresh subprocess: everything `exp sweep`
             does before the first trial starts (trials, their hashes, the base spec).
  one pass   in this process, the same schemas: framework.plan.SweepChecker over a grid of
             min(--trials, 1024) trials (the spec validated once, each trial re-validating what
             its overrides reach) vs each of those trials loaded and validated on its own (the way
             before one-pass planning); per trial, and their ratio.

Goal (issue 13): 10,000 trials validated and planned in < 3 s each.

    python benchmarks/sweep_planning.py --trials 10000 [--runs 3]
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_result import bench_line, cached_bytecode  # noqa: E402
from validate_speed import best_wall  # noqa: E402

GOAL_SECONDS = 3.0


def grid_spec(folder: Path, trials: int) -> Path:
    """A side x side grid (side = ceil(sqrt(trials))) extending the tiny cvm_fairness spec."""
    side = math.ceil(math.sqrt(trials))
    values = ", ".join(f"{i / 1000}" for i in range(1, side + 1))
    spec = folder / f"grid{side * side}.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\n"
                    f"sweep:\n  grid: {{optimizer.lr: [{values}], loss.terms.cvm.weight: [{values}]}}\n")
    return spec


def one_pass_vs_each(spec: Path) -> tuple[float, float, int]:
    """(s/trial one pass, s/trial each on its own, trials), in this process, same schemas."""
    from framework.loader import load_spec
    from framework.plan import SweepChecker, validate_plan
    from framework.schema import CommittedSchemas

    schemas = CommittedSchemas(live_fallback=True)
    t0 = time.perf_counter()
    checker = SweepChecker(spec, [], schemas)
    problems = checker.check()
    t_one = time.perf_counter() - t0
    if problems:
        sys.exit(f"the grid has problems: {problems[:3]}")
    t0 = time.perf_counter()
    for trial in checker.trials:
        validate_plan(load_spec(spec, trial.overrides), schemas)
    t_each = time.perf_counter() - t0
    n = len(checker.trials)
    return t_one / n, t_each / n, n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=10_000, help="about this many trials (a square grid)")
    p.add_argument("--runs", type=int, default=3, help="subprocess runs per row; the best is kept")
    args = p.parse_args()
    cached_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="expspec-grid-"))
    try:
        big, small = grid_spec(folder, args.trials), grid_spec(folder, min(args.trials, 1024))
        exp = shutil.which("exp")
        cli = [exp] if exp else [sys.executable, "-m", "framework.cli"]
        plan = f"from framework.sweep_plan import plan_trials; print(len(plan_trials({str(big)!r}, [])[0]))"
        t_validate, done = best_wall([*cli, "validate", "-q", "--no-cache", str(big)], args.runs)
        t_plan, planned = best_wall([sys.executable, "-c", plan], args.runs)
        if done.returncode or planned.returncode:
            sys.exit(f"grid failed:\n{done.stderr[-2000:]}{planned.stderr[-2000:]}")
        n = int(planned.stdout.strip())
        one, each, m = one_pass_vs_each(small)
        print(f"{n} trials: exp validate {t_validate:.2f} s, planning {t_plan:.2f} s; {m} trials in process: "
              f"one pass {one * 1e3:.3f} ms/trial, each on its own {each * 1e3:.3f} ms/trial")
        bench_line(f"`exp validate`, {n}-trial grid (fresh process)", t_validate, None, "s",
                   f"< {GOAL_SECONDS:g} s", t_validate < GOAL_SECONDS)
        bench_line(f"`exp sweep` planning, {n}-trial grid (fresh process)", t_plan, None, "s",
                   f"< {GOAL_SECONDS:g} s", t_plan < GOAL_SECONDS)
        bench_line(f"per trial: one pass vs each trial on its own ({m} trials, in process)", one * 1e3, each * 1e3,
                   "ms")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
