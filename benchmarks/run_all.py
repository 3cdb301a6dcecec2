"""Run every benchmark and print one markdown table: what | expspec | baseline | ratio | goal | met?

Each benchmark script runs as its own subprocess (fresh imports, its own temporary stores) and
prints machine-readable `BENCH {json}` rows (benchmarks/bench_result.py); this runner collects
them in order. A row whose script is missing reads "not run (missing script)", a script that
fails reads "failed (exit N)" with its last line, one that prints no `BENCH` row says so: nothing
is filled in by hand. The table starts with the date and the machine; numbers are wall-clock, so
run it on a quiet machine and read ratios, not absolute values, across machines.

    python benchmarks/run_all.py [--only overhead] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# (row label when the script gives no row, script candidates (the first present runs), arguments)
BENCHMARKS: list[tuple[str, list[str], list[str]]] = [
    # issue 13's goals are for the specs it measured (the six papers then in); all of specs/ after
    ("`exp validate`, issue 13's specs", ["validate_speed.py"], ["--specs", "issue13", "--goals", "--scale", "1"]),
    ("`exp validate`, issue 13's specs x10", ["validate_speed.py"], ["--specs", "issue13", "--goals", "--scale", "10",
                                                                     "--repeat-specs", "1"]),
    ("`exp validate`, 1x specs", ["validate_speed.py"], ["--scale", "1", "--repeat-specs", "3"]),
    ("`exp validate`, 10x specs", ["validate_speed.py"], ["--scale", "10", "--runs", "3", "--repeat-specs", "1"]),
    ("`exp validate`, 100x specs", ["validate_speed.py"], ["--scale", "100", "--runs", "1", "--repeat-specs", "1"]),
    ("sweep planning, 1,000-trial grid", ["sweep_planning.py"], ["--trials", "1000"]),
    ("sweep planning, 10,000-trial grid", ["sweep_planning.py"], ["--trials", "10000"]),
    ("sweep cost per extra trial", ["sweep_overhead.py", "sweep_throughput.py"], []),
    ("`exp run` per training step", ["overhead.py"], []),
    ("last output to process exit", ["exit_time.py"], []),
    ("bad override vs `exp validate`", ["override_answer.py"], []),
    ("claim check of a paper, warm workers vs a process per trial", ["reproduce_isolation.py"], []),
    ("run context and store, per tiny run", ["run_overhead.py"], ["--skip-reproduce", "--rounds", "1"]),
]


def run_one(label: str, candidates: list[str], arguments: list[str], timeout: float) -> list[dict]:
    """The BENCH rows of the first present script, or one row saying why there are none."""
    script = next((HERE / name for name in candidates if (HERE / name).is_file()), None)
    if script is None:
        return [{"what": label, "note": f"not run (missing script: {' or '.join(candidates)})"}]
    command = [sys.executable, str(script), *arguments]
    print(f"$ {' '.join([Path(command[0]).name, str(script.relative_to(ROOT)), *arguments])}", file=sys.stderr, flush=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return [{"what": label, "note": f"failed (over {timeout:.0f} s)"}]
    rows = [json.loads(line[len("BENCH "):]) for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
    if done.returncode != 0:
        return rows + [{"what": label, "note": f"failed (exit {done.returncode}): {last[0][:120]}"}]
    return rows or [{"what": label, "note": f"ran, but {script.name} printed no BENCH row"}]


def number(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    return f"{value:.3g} {unit}" if unit != "s" or value < 100 else f"{value:.0f} s"


def table(rows: list[dict]) -> str:
    lines = ["| what | expspec | baseline | ratio | goal | met? |", "|---|---|---|---|---|---|"]
    for row in rows:
        if "note" in row:
            lines.append(f"| {row['what']} | {row['note']} | | | | |")
            continue
        ratio = "" if row.get("ratio") is None else f"{row['ratio']:.2f}x"
        met = {True: "yes", False: "no", None: ""}[row.get("met")]
        lines.append(f"| {row['what']} | {number(row['expspec'], row['unit'])} | {number(row.get('baseline'), row['unit'])}"
                     f" | {ratio} | {row.get('goal', '')} | {met} |")
    return "\n".join(lines)


def machine() -> str:
    return (f"{datetime.date.today().isoformat()}, {platform.node()}: {os.cpu_count()} cores, "
            f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
            f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the benchmarks whose row label or script name contains this")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per script")
    args = parser.parse_args()
    header = machine()
    rows: list[dict] = []
    for label, candidates, arguments in BENCHMARKS:
        if args.only and args.only not in label and not any(args.only in c for c in candidates):
            continue
        rows += run_one(label, candidates, arguments, args.timeout)
    print(f"{header}\n\n{table(rows)}")


if __name__ == "__main__":
    main()
