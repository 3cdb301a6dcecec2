"""Recorded results: what each default-tier run of a paper produced, kept in its folder, and the
check that the recording is what the code produces.

- `exp reproduce specs/<paper>/ --record` runs every default-tier run from scratch, in a throwaway
  store and result cache (so nothing cached from older code is recorded), checks the claims on
  them and writes `specs/<paper>/results.lock.yaml`: per run alias, its operative-spec hash, the
  torch threads it ran with and its final metrics (per trial for a sweep), with the code version
  and the package versions it ran on. Text, diffable, no weights.
- `exp reproduce specs/<paper>/` evaluates the claims on the recording for every alias whose
  spec hashes all match it (a changed spec has no recording: it is obtained as before) and says so.
- `verify` re-runs recorded runs from scratch (`--verify N`: a sample of N, the headline's arms
  first, drawn from the commit hash, so a failure can be reproduced; `--verify-all`: every one)
  and requires the recorded metrics: bit-identical (a run is deterministic on CPU at the same
  number of threads), unless the claims file's `verify:` rules say otherwise for a metric, with
  the reason (wall-clock time is not compared). A difference is a `RecordMismatch` that names the
  run, the metric, both values and the command that re-records.
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import random
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.discovery import CLAIMS_FILE, RECORD_FILE

# Lightning's own epoch counter: MLflow has it for some runs and not others; no claim reads it.
UNRECORDED = {"epoch"}
PACKAGES = ("torch", "lightning", "numpy", "scipy", "scikit-learn", "torchmetrics", "transformers",
            "diffusers", "peft")


@dataclass
class Recorded:
    """One recorded run (`index` None) or sweep trial (`index`: its place in the sweep)."""

    alias: str
    index: int | None
    spec_hash: str
    metrics: dict[str, float]
    values: dict[str, Any] = field(default_factory=dict)
    threads: int | None = None

    def where(self) -> str:
        if self.index is None:
            return f"run `{self.alias}`"
        shown = ", ".join(f"{k}={v}" for k, v in self.values.items())
        return f"run `{self.alias}` trial {self.index} ({shown})"


class RecordMismatch(AssertionError):
    """A recorded result that is not what the code produces now."""


def record_path(folder: str | Path) -> Path:
    return Path(folder) / RECORD_FILE


def rerecord_command(folder: str | Path) -> str:
    return f"exp reproduce {Path(folder).as_posix().rstrip('/')}/ --record"


# ---------------------------------------------------------------- the runs a paper needs, by hash

@dataclass
class Planned:
    """A run the claims need: its spec, overrides, and (for a sweep) each trial with its hash."""

    alias: str
    spec: Path
    overrides: list[str]
    sweep: bool
    hashes: list[str]
    trials: list[Any]  # framework.plan.Trial per hash; [None] for a plain run


def plan_runs(runs: dict[str, Any], folder: Path) -> dict[str, Planned]:
    """alias -> Planned, for the RunRefs given; hashes as `exp run` / `exp sweep` compute them."""
    from framework.loader import load_spec
    from framework.plan import expand_sweep
    from framework.runner import plan_hash, prepare
    from framework.sweep_plan import plan_trials

    planned = {}
    for alias, ref in runs.items():
        spec = folder / ref.spec
        if expand_sweep(load_spec(spec, ref.overrides)):
            trials, hashes, _ = plan_trials(spec, ref.overrides)
            planned[alias] = Planned(alias, spec, list(ref.overrides), True, hashes, trials)
        else:
            planned[alias] = Planned(alias, spec, list(ref.overrides), False,
                                     [plan_hash(prepare(spec, ref.overrides), spec)], [None])
    return planned


# ---------------------------------------------------------------- writing and reading the file

def write_record(folder: Path, paper: str, planned: dict[str, Planned], results: dict[str, Any]) -> Path:
    """Write the folder's record from the results just obtained (RunResult or a list of
    TrialResults per alias, in plan order)."""
    import yaml

    runs: dict[str, Any] = {}
    for alias, plan in planned.items():
        result = results[alias]
        entries = []
        for i, (h, one) in enumerate(zip(plan.hashes, result if plan.sweep else [result])):
            entry: dict[str, Any] = {"hash": h, "threads": _threads(one.run_id)}
            if plan.sweep:
                entry["values"] = dict(one.values)
            entry["metrics"] = {k: float(v) for k, v in sorted(one.metrics.items()) if k not in UNRECORDED}
            entries.append(entry)
        runs[alias] = entries if plan.sweep else entries[0]
    header = (f"# What each default-tier run of {paper} produced, written by `{rerecord_command(folder)}`\n"
              "# (every run from scratch). `exp reproduce` checks the claims on these numbers when the\n"
              "# spec hashes match; CI re-runs a sample and requires the same numbers. Do not edit.\n")
    body = {"paper": paper, "code": code_version(), "packages": _packages(), "runs": runs}
    path = record_path(folder)
    path.write_text(header + yaml.dump(body, Dumper=_dumper(), sort_keys=False, width=100, allow_unicode=True))
    return path


def read_record(folder: str | Path) -> dict[str, Any] | None:
    """The folder's record as written, or None when there is none."""
    import yaml

    path = record_path(folder)
    if not path.is_file():
        return None
    data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        raise ValueError(f"{path}: not a results record (no 'runs:' mapping); re-record with `{rerecord_command(folder)}`")
    return data


def recorded_runs(record: dict[str, Any], plan: Planned) -> list[Recorded] | None:
    """The recorded runs of one alias when they are recorded for exactly its current hashes, else None."""
    entry = record["runs"].get(plan.alias)
    if entry is None:
        return None
    entries = entry if isinstance(entry, list) else [entry]
    if isinstance(entry, list) != plan.sweep or [e.get("hash") for e in entries] != plan.hashes:
        return None
    return [Recorded(plan.alias, i if plan.sweep else None, e["hash"], dict(e.get("metrics") or {}),
                     dict(e.get("values") or {}), e.get("threads")) for i, e in enumerate(entries)]


def as_results(recorded: list[Recorded], sweep: bool) -> Any:
    """What the claims read: a RunResult, or a list of TrialResults for a sweep."""
    from framework.claims.reproduction import TrialResult
    from framework.result_cache import RunResult

    if not sweep:
        r = recorded[0]
        return RunResult(run_id=None, metrics=dict(r.metrics), spec_hash=r.spec_hash)
    return [TrialResult(run_id=None, metrics=dict(r.metrics), values=dict(r.values), spec_hash=r.spec_hash)
            for r in recorded]


# ---------------------------------------------------------------- verification by re-running

def sample(recorded: dict[str, list[Recorded]], headline_aliases: list[str], size: int | None,
           seed: str) -> list[Recorded]:
    """The runs to re-run: all (`size` None), or `size` of them drawn with `seed`, one of the
    headline's arms first (when it has recorded runs)."""
    every = [r for runs in recorded.values() for r in runs]
    if size is None or size >= len(every):
        return every
    rng = random.Random(seed)
    first = [r for a in headline_aliases for r in recorded.get(a, [])]
    picks = [rng.choice(first)] if first and size > 0 else []
    rest = [r for r in every if r not in picks]
    return picks + rng.sample(rest, max(0, size - len(picks)))


def verify(folder: Path, planned: dict[str, Planned], picks: list[Recorded], rules: list[Any],
           echo: Any = print) -> list[str]:
    """Re-run each pick from scratch (in this process, at its recorded threads) and compare its
    metrics with the record. Returns one line per pick; raises RecordMismatch on a difference."""
    from framework.runner import run

    lines = []
    for rec in picks:
        plan = planned[rec.alias]
        trial = plan.trials[rec.index or 0]
        overrides = [*plan.overrides, *(trial.overrides if trial is not None else [])]
        if rec.threads:
            overrides.append(f"hardware.threads={rec.threads}")
        echo(f"== verify {rec.where()}: exp run {plan.spec} {' '.join(overrides)}")
        result = run(plan.spec, overrides)
        problems = compare(rec, _logged(result), rules)
        if problems:
            types = family_types(plan.spec, overrides)
            others = [p for p in papers_using(types, folder.parent) if p != folder.name]
            shared = (f"\nOther papers whose runs use its model, task, data or loss ({', '.join(sorted(types))}): "
                      + (", ".join(others) if others else "none")
                      + f"; check each with `exp reproduce {folder.parent.as_posix()}/<paper>/ --verify-all` "
                      "and re-record those that differ.") if types else ""
            raise RecordMismatch(
                f"{record_path(folder)}: {rec.where()} no longer reproduces its recorded result "
                f"(spec hash {rec.spec_hash}):\n  " + "\n  ".join(problems)
                + f"\nThe code now produces other numbers. If that is intended, re-record: "
                f"`{rerecord_command(folder)}`." + shared)
        lines.append(f"verified {rec.where()}: {len(rec.metrics)} metric(s) as recorded")
    return lines


FAMILY_KEYS = ("model", "task", "data", "loss")  # where a paper's own components sit in a spec


def family_types(spec: Path, overrides: list[str]) -> set[str]:
    """The component types under a spec's model, task, data and loss (its stages' too): what a
    change in shared code most likely reached (an optimizer or a callback is shared by all)."""
    from framework.loader import load_spec

    data = load_spec(spec, overrides).data
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                found.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for part in [data, *(data.get("stages") or {}).values()]:
        for key in FAMILY_KEYS:
            walk((part or {}).get(key))
    return found


def papers_using(types: set[str], specs: Path) -> list[str]:
    """The paper folders under `specs` with a default-tier run whose model, task, data or loss uses one of `types`."""
    from framework.claims.schema import load_claims

    found = []
    for claims_file in sorted(specs.glob(f"*/{CLAIMS_FILE}")):
        try:
            claims, _ = load_claims(claims_file.parent)
            if any(types & family_types(claims_file.parent / ref.spec, ref.overrides)
                   for ref in claims.runs.values() if ref.tier == "default"):
                found.append(claims_file.parent.name)
        except Exception:  # noqa: BLE001 - a broken paper folder says nothing about this one
            continue
    return found


def _logged(result: Any) -> dict[str, float]:
    """A run's final metrics as its MLflow run has them (with the training curves' last values),
    and as the run returned them: a trial that a sweep skipped (its hash had finished elsewhere)
    was recorded from MLflow, a trial that ran from its result, so a re-run offers both."""
    from framework.tracking import client

    logged = dict(client().get_run(result.run_id).data.metrics) if result.run_id else {}
    return {**logged, **result.metrics}


def compare(rec: Recorded, metrics: dict[str, float], rules: list[Any]) -> list[str]:
    """Each recorded metric against the re-run's: equal (bit for bit; nan equals nan), or within
    the first matching rule's tolerance, or not compared when that rule says so."""
    problems = []
    for key, old in rec.metrics.items():
        rule = next((r for r in rules if fnmatch.fnmatchcase(key, r.metrics)), None)
        if rule is not None and not rule.compare:
            continue
        if key not in metrics:
            problems.append(f"metric {key!r}: recorded {old!r}, the re-run does not log it")
            continue
        new = float(metrics[key])
        if new == old or (math.isnan(new) and math.isnan(old)):
            continue
        if rule is not None and math.isclose(new, old, rel_tol=rule.rel, abs_tol=rule.abs):
            continue
        allowed = f" (allowed: rel {rule.rel:g}, abs {rule.abs:g})" if rule is not None else " (must be identical)"
        problems.append(f"metric {key!r}: recorded {old!r}, the re-run gives {new!r}{allowed}")
    return problems


# ---------------------------------------------------------------- helpers

@contextlib.contextmanager
def throwaway_store() -> Iterator[Path]:
    """Run in a new, empty MLflow store and result cache (for this process and the trials it
    starts: the stores of the active run context, framework/invocation.py): recorded runs are
    runs of the code as it is now, not cached from older code."""
    from framework.invocation import current, use

    with tempfile.TemporaryDirectory(prefix="expspec-record-") as tmp:
        with use(current().but(tracking_uri=f"sqlite:///{tmp}/mlflow.db", cache_dir=Path(tmp) / "cache",
                               runs_dir=Path(tmp) / "runs")):
            yield Path(tmp)


def _threads(run_id: str | None) -> int | None:
    """The torch threads a run used (its `expspec.torch_threads` tag): numbers can differ in the last
    bits between thread counts, so a verification re-runs at the same count. A staged run's parent
    only opens the run (its tag is the process's default): its stages' threads count, when they agree."""
    if not run_id:
        return None
    from framework.tracking import client

    store = client()
    run = store.get_run(run_id)
    if "hardware.threads" in run.data.params:  # a run that trained: its own count
        found = {run.data.tags.get("expspec.torch_threads")}
    else:
        stages = store.search_runs([run.info.experiment_id], f"tags.`mlflow.parentRunId` = '{run_id}'")
        found = {stage.data.tags.get("expspec.torch_threads") for stage in stages}
    value = found.pop() if len(found) == 1 else None
    return int(value) if value and value.isdigit() else None


def code_version() -> str:
    try:
        root = Path(__file__).resolve().parents[2]
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+uncommitted" if dirty.stdout.strip() else "")


def _packages() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in PACKAGES:
        with contextlib.suppress(PackageNotFoundError):
            found[name] = version(name)
    return found


def _dumper() -> Any:
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        pass

    # a trial's values and metrics on one line each: the file diffs run by run
    def flow_map(dumper: Any, data: dict[str, Any]) -> Any:
        flow = bool(data) and all(not isinstance(v, (dict, list)) for v in data.values())
        return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=flow)

    Dumper.add_representer(dict, flow_map)
    return Dumper
