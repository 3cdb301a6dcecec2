"""How fast is spec validation, and what does `exp validate` save by never importing torch?

Measured (all on the spec files `exp validate` would pick up under --specs, default specs/):

  (a) cli        `exp validate -q --no-cache SPECS` as a subprocess: the real user path, every file
                 checked. The committed JSON Schema (CommittedSchemas) is read; torch and lightning
                 are never imported. Wall time of the whole process (interpreter start included),
                 best of --runs.
      reused     the same with the validate cache (framework/validate_cache.py) filled by an untimed
                 run: nothing changed since (a CI rerun), and one spec edited before each timed run
                 (the edit-validate loop: that file is checked, every other result reused).
  (b) full       a fresh `python -c` subprocess that runs framework.loader.load_spec +
                 framework.validate.validate with framework.schema.LiveSchemas() (the check
                 `exp run` does): it imports torch, lightning and every component it names, so
                 import time is charged. Wall time of the whole process, best of --runs.
      python     `python -c pass`, the floor both subprocess rows stand on.
  (c) warm       in this process, after one untimed pass has paid every import: load_spec +
                 validate of each spec --repeat-specs times, for both schema sources. One schemas
                 object per pass over the specs, as one CLI invocation or one run makes it.
                 Reported per spec, split into load (YAML, extends, overrides) and validate.

How to read it: the subprocess rows are what a user waits for; `full / cli` is what the no-torch
design saves per `exp validate` call (mostly torch + lightning import time, a fixed cost, so
ms/spec of the subprocess rows falls as specs are added). The warm rows are the marginal cost of
one more spec; `live / committed` there compares the two schema sources once imports are paid
(LiveSchemas builds each component's schema from its signature on first use, per instance).
The "torch imported by `exp validate`" line must read "no": that is the design's invariant.
Numbers are wall-clock on a shared machine: compare ratios, not absolute values across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_result import bench_line, cached_bytecode

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = {1: 0.5, 10: 1.0}  # issue 13: `exp validate` of its day's specs, and of 10x as many
# The specs issue 13 measured its goals on ("today's 54 specs"): the six papers then in specs/.
# Their folders hold 62 files now (specs and claims files); `--specs issue13` names them.
ISSUE13_PAPERS = ["cvm_fairness", "perturbed_eg", "gamma_laplace", "stompp", "sae_replay", "lotts"]

FULL_PATH = """
import sys, time
t0 = time.perf_counter()
from framework.discovery import spec_files
from framework.errors import SpecError
from framework.loader import load_spec
from framework.schema import LiveSchemas
from framework.plan import validate_plan as validate  # stages too, as `exp validate` does
schemas, bad = LiveSchemas(), 0
for path in spec_files(sys.argv[1:], claims=False):  # claims files: load_claims
    try:
        validate(load_spec(path), schemas)
    except SpecError:
        bad += 1
print(bad, 'torch' in sys.modules, 'lightning' in sys.modules, time.perf_counter() - t0)
"""

TORCH_CHECK = """
import io, contextlib, sys
from framework.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    rc = main(['validate', '-q', *sys.argv[1:]])
import json
print(json.dumps({'rc': rc, **{m: m in sys.modules for m in ('torch', 'lightning', 'mlflow')}}))
"""


def best_wall(cmd: list[str], runs: int, before: Any = None) -> tuple[float, subprocess.CompletedProcess]:
    """Best wall time of `runs` runs of `cmd`; `before(i)` is called (untimed) before run i."""
    best, last = float("inf"), None
    for i in range(runs):
        if before is not None:
            before(i)
        t0 = time.perf_counter()
        last = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        best = min(best, time.perf_counter() - t0)
    return best, last


def warm_per_spec(files: list[Path], source: str, repeat: int) -> tuple[float, float, int]:
    """(load s/spec, validate s/spec, failures per pass), imports already paid."""
    from framework.errors import SpecError
    from framework.loader import load_spec
    from framework.schema import CommittedSchemas, LiveSchemas
    from framework.plan import validate_plan as validate  # stages too, as `exp validate` does

    make = CommittedSchemas if source == "committed" else LiveSchemas
    t_load = t_val = 0.0
    failures = 0
    for _ in range(repeat):
        schemas = make()
        failures = 0
        for path in files:
            t0 = time.perf_counter()
            loaded = load_spec(path)
            t1 = time.perf_counter()
            try:
                validate(loaded, schemas)
            except SpecError:
                failures += 1
            t_val += time.perf_counter() - t1
            t_load += t1 - t0
    n = repeat * len(files)
    return t_load / n, t_val / n, failures


def scaled_copies(paths: list[str], scale: int) -> list[str]:
    """`scale` copies of each spec folder (or file) in a temporary folder, relative references intact."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="expspec-validate-scale-"))
    copies = []
    for k in range(scale):
        for path in map(Path, paths):
            target = folder / f"copy{k}" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                shutil.copytree(path, target)
            else:
                shutil.copy(path, target)
            copies.append(str(target))
    return copies


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--specs", nargs="+", default=["specs"],
                   help="spec files or folders (default: specs); `issue13`: the six papers' folders issue 13 measured")
    p.add_argument("--goals", action="store_true",
                   help="state issue 13's goals (0.5 s at 1x, 1.0 s at 10x): for the workload they were set on")
    p.add_argument("--runs", type=int, default=7, help="subprocess runs per `exp validate` row; the best is kept")
    p.add_argument("--baseline-runs", type=int, default=1, help="runs of the live-signature baseline (slow)")
    p.add_argument("--repeat-specs", type=int, default=50, help="in-process passes over the specs (warm rows)")
    p.add_argument("--scale", type=int, default=1, help="validate N copies of the spec folders (1x, 10x, 100x)")
    args = p.parse_args()
    cached_bytecode()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    workload = "issue 13's six papers" if args.specs == ["issue13"] else " ".join(args.specs)
    if args.specs == ["issue13"]:
        args.specs = [f"specs/{paper}" for paper in ISSUE13_PAPERS]
    args.specs = scaled_copies(args.specs, args.scale)  # copies even at 1x: the edit row edits one
    import tempfile

    os.environ["EXPSPEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="expspec-validate-cache-")  # subprocesses inherit it

    from framework.discovery import spec_files

    files = spec_files(args.specs, claims=False)  # specs; the cli row also reads claims files
    if not files:
        sys.exit(f"no spec files under {args.specs}")
    n = len(files)
    # The console script installed with this interpreter, as a virtual environment runs it (on
    # PATH there may be a version manager's shim first: pyenv's adds ~0.13 s of bash per call).
    exp = Path(sys.executable).with_name("exp")
    cli_cmd = [str(exp)] if exp.is_file() else [sys.executable, "-c", "from framework.cli import entry; entry()"]
    print(f"{n} spec file(s) under {' '.join(args.specs)}; subprocess rows: best of {args.runs}; "
          f"warm rows: {args.repeat_specs} pass(es)\n")

    t_py, _ = best_wall([sys.executable, "-c", "pass"], args.runs)
    t_cli, res = best_wall([*cli_cmd, "validate", "-q", "--no-cache", *args.specs], args.runs)
    cli_note = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else f"rc={res.returncode}"
    subprocess.run([*cli_cmd, "validate", "-q", *args.specs], cwd=ROOT, capture_output=True)  # fills the cache
    t_same, _ = best_wall([*cli_cmd, "validate", "-q", *args.specs], args.runs)
    edited = files[len(files) // 2]
    original = edited.read_text()

    def edit(i: int) -> None:
        edited.write_text(f"{original}\n# edit {i}\n")

    t_edit, res = best_wall([*cli_cmd, "validate", "-q", *args.specs], args.runs, edit)
    edited.write_text(original)
    edit_note = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else f"rc={res.returncode}"
    t_full, res = best_wall([sys.executable, "-c", FULL_PATH, *args.specs], args.baseline_runs)
    if res.returncode != 0:
        sys.exit(f"full path failed:\n{res.stderr}")
    bad, torch_full, _, _ = res.stdout.split()
    check = subprocess.run([sys.executable, "-c", TORCH_CHECK, *args.specs], cwd=ROOT, capture_output=True, text=True)
    imported = json.loads(check.stdout.strip().splitlines()[-1]) if check.returncode == 0 else {"error": check.stderr[-300:]}

    # (c): one untimed pass per source pays the imports (LiveSchemas pulls in torch and components).
    for source in ("committed", "live"):
        warm_per_spec(files, source, 1)
    warm = {s: warm_per_spec(files, s, args.repeat_specs) for s in ("committed", "live")}

    print(f"{'row':44s} {'total ms':>10s} {'ms/spec':>10s}")
    print(f"{'python -c pass (interpreter floor)':44s} {t_py * 1e3:10.1f} {'':>10s}")
    print(f"{'(a) cli: exp validate -q (subprocess)':44s} {t_cli * 1e3:10.1f} {t_cli * 1e3 / n:10.2f}   [{cli_note}]")
    print(f"{'    reused: nothing changed':44s} {t_same * 1e3:10.1f} {t_same * 1e3 / n:10.2f}")
    print(f"{'    reused: one spec edited before each run':44s} {t_edit * 1e3:10.1f} {t_edit * 1e3 / n:10.2f}   [{edit_note}]")
    print(f"{'(b) full: LiveSchemas, fresh subprocess':44s} {t_full * 1e3:10.1f} {t_full * 1e3 / n:10.2f}"
          f"   [{bad} invalid; torch imported: {torch_full}]")
    print()
    print(f"{'(c) warm, in-process, per spec':44s} {'load ms':>10s} {'valid. ms':>10s} {'total ms':>10s}")
    for source, (t_load, t_val, failures) in warm.items():
        label = f"{source} schemas" + (f" ({failures} invalid)" if failures else "")
        print(f"{'    ' + label:44s} {t_load * 1e3:10.3f} {t_val * 1e3:10.3f} {(t_load + t_val) * 1e3:10.3f}")
    print()
    print("ratios")
    print(f"  full / cli (subprocess wall)               {t_full / t_cli:6.2f}x")
    print(f"  cli - python floor (validate's own cost)   {(t_cli - t_py) * 1e3:7.1f} ms")
    print(f"  full - python floor                        {(t_full - t_py) * 1e3:7.1f} ms")
    c, l = (sum(warm[s][:2]) for s in ("committed", "live"))
    print(f"  warm live / committed (per spec)           {l / c:6.2f}x")
    print()
    print(f"modules after framework.cli.main(['validate','-q',...]) in a fresh process: {imported}")
    verdict = "no (as designed)" if imported.get("torch") is False else "YES: the no-torch invariant is broken"
    print(f"torch imported by `exp validate`: {verdict}")
    goal = GOAL_SECONDS.get(args.scale) if args.goals else None
    bench_line(f"`exp validate` of {workload} at {args.scale}x ({len(spec_files(args.specs))} files), every file "
               f"checked (best of {args.runs}), vs live signatures", t_cli,
               t_full, "s", f"< {goal} s" if goal else "", None if goal is None else t_cli < goal)
    bench_line(f"`exp validate` of {workload} at {args.scale}x, one spec edited (others' results reused) vs every "
               "file checked",
               t_edit, t_cli, "s", f"< {goal} s" if goal else "", None if goal is None else t_edit < goal)


if __name__ == "__main__":
    main()
