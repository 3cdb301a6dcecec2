"""The machine-readable result row every benchmark prints for benchmarks/run_all.py.

One line per result: `BENCH {json}` with what (the row's label), expspec and baseline (the two
measured numbers, in `unit`), ratio (expspec / baseline), goal (text, e.g. "<= 1.05x" or
"< 0.5 s"; empty when the issue sets none) and met (true/false, null without a goal).
"""

from __future__ import annotations

import json


def bench_line(what: str, expspec: float, baseline: float | None, unit: str, goal: str = "",
               met: bool | None = None) -> str:
    """Print and return the row; `met` is decided by the caller, which knows what the goal bounds."""
    ratio = expspec / baseline if baseline else None
    row = {"what": what, "expspec": round(expspec, 4), "baseline": None if baseline is None else round(baseline, 4),
           "unit": unit, "ratio": None if ratio is None else round(ratio, 3), "goal": goal, "met": met}
    line = "BENCH " + json.dumps(row)
    print(line, flush=True)
    return line
