"""What warm workers save on a paper's claim check, the work CI does for every paper.

`exp reproduce specs/<paper>/ --fresh` runs every run and sweep trial the paper's default-tier
claims read, then checks the claims. It is timed twice per paper, each in a fresh subprocess with
its own fresh MLflow store, runs folder and cache (nothing reused between the two):

  fork      the default: sweep trials forked from a warm server that imported torch, Lightning,
            MLflow and the components once (framework.warm)
  process   `--isolate process`: a fresh `python -m framework.cli run ...` per trial, the path
            every sweep took before warm workers

Both must pass the same claims (exit 0); the ratio process / fork is what warm workers save on
that paper's CI cost. Numbers are wall-clock: read the ratio; absolute seconds depend on the load.

    python benchmarks/reproduce_isolation.py [--papers drift_sysid lie_bases] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_result import bench_line, cached_bytecode, timed_in_fresh_store  # noqa: E402


def reproduce(paper: str, isolate: str, jobs: int) -> float:
    """Wall seconds of a fresh `exp reproduce` of the paper's default tier, in a fresh store."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", "framework.cli", "reproduce", f"specs/{paper}/", "--fresh",
               "--jobs", str(jobs), "--isolate", isolate]
    return timed_in_fresh_store(command, ROOT, env, f"expspec-reproduce-{isolate}-")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--papers", nargs="+", default=["drift_sysid", "lie_bases"])
    p.add_argument("--jobs", type=int, default=2, help="as `exp reproduce` runs in CI")
    args = p.parse_args()
    cached_bytecode()
    total = {"fork": 0.0, "process": 0.0}
    for paper in args.papers:
        seconds = {isolate: reproduce(paper, isolate, args.jobs) for isolate in ("fork", "process")}
        for isolate, value in seconds.items():
            total[isolate] += value
        print(f"{paper:16s} fork {seconds['fork']:7.1f} s   process {seconds['process']:7.1f} s   "
              f"saved {1 - seconds['fork'] / seconds['process']:5.1%}")
    bench_line(f"`exp reproduce --fresh` of {', '.join(args.papers)}: warm workers vs --isolate process",
               total["fork"], total["process"], "s")


if __name__ == "__main__":
    main()
