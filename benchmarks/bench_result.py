"""The machine-readable result row every benchmark prints for benchmarks/run_all.py.

One line per result: `BENCH {json}` with what (the row's label), expspec and baseline (the two
measured numbers, in `unit`), ratio (expspec / baseline), goal (text, e.g. "<= 1.05x" or
"< 0.5 s"; empty when the issue sets none) and met (true/false, null without a goal).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def bench_line(what: str, expspec: float, baseline: float | None, unit: str, goal: str = "",
               met: bool | None = None) -> str:
    """Print and return the row; `met` is decided by the caller, which knows what the goal bounds."""
    ratio = expspec / baseline if baseline else None
    row = {"what": what, "expspec": round(expspec, 4), "baseline": None if baseline is None else round(baseline, 4),
           "unit": unit, "ratio": None if ratio is None else round(ratio, 3), "goal": goal, "met": met}
    line = "BENCH " + json.dumps(row)
    print(line, flush=True)
    return line


def cached_bytecode() -> None:
    """Write the bytecode of expspec's own modules (framework/, components/, registry.py), as their
    first import does on a usual Python, before anything is timed: a fresh process then reads it
    instead of compiling every module again. A Python started with PYTHONDONTWRITEBYTECODE set (as
    some containers do, this one among them) never writes it, and each `exp` call compiled every
    module it imports (`exp validate --no-cache` of issue 13's 62 files, 10 runs each, alternating:
    median 0.663 s with the bytecode, 0.746 s without); site-packages was compiled by pip at
    install. Writes only files that are missing or older than their source."""
    import compileall

    root = Path(__file__).resolve().parents[1]
    for folder in ("framework", "components"):
        compileall.compile_dir(root / folder, quiet=1)
    compileall.compile_file(root / "registry.py", quiet=1)


def timed_in_fresh_store(command: list[str], cwd: Path | None, env: dict[str, str], prefix: str) -> float:
    """Wall seconds of `command` run with a fresh MLflow store, runs folder and cache (in a new
    temporary folder, also the working directory when `cwd` is None); exits with the command's
    output when it fails."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    env = {**env, "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}",
           "EXPSPEC_RUNS_DIR": str(folder / "runs"), "EXPSPEC_CACHE_DIR": str(folder / "cache")}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd or folder, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds
