"""From one spec file to the runs it stands for: stages and sweep trials.

Stages: a spec with `stages: {name: {...}, ...}` stands for one run per stage, in the order
written. Each stage's mapping is merged onto the spec's other top-level keys (the same rule as
`extends:`: mappings merge, lists and scalars replace), so shared sections are written once. A
stage refers to an earlier stage's trained weights with `init: {stage: <name>}`. The stage runs
are children of one parent run.

Sweeps: `sweep:` expands into trials, each the spec plus the trial's overrides (see
`framework.spec.Sweep`). Trials are named by the values they vary, e.g. `weight=3.0,seed=1`.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any, Callable


from framework.errors import Mark, Problem, SpecError, key_parts, list_index
from framework.loader import SpecFiles, apply_overrides, load_file, load_spec, merge_loaded, set_value
from framework.marked_yaml import Loaded, copy_tree, dump_line
from framework.references import reference_targets, resolve_references
from framework.spec import Sweep
from framework.validate_cache import note_exists
from framework.validate import CheckMemo, Schemas, validate
from framework.wording import yaml_type

_STAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass
class Unit:
    """One run: the whole spec (stage None) or one stage of it."""

    stage: str | None
    loaded: Loaded
    operative: dict[str, Any]


@dataclass
class Trial:
    name: str
    values: dict[str, Any]
    overrides: list[str] = field(default_factory=list)


def _sub_loaded(loaded: Loaded, prefix: tuple, data: Any) -> Loaded:
    n = len(prefix)
    return Loaded(
        data=data,
        key_marks={p[n:]: m for p, m in loaded.key_marks.items() if p[:n] == prefix and len(p) > n},
        value_marks={p[n:]: m for p, m in loaded.value_marks.items() if p[:n] == prefix and len(p) > n},
        source=loaded.source,
    )


def stage_specs(loaded: Loaded) -> list[tuple[str | None, Loaded]]:
    """[(None, loaded)] for a plain spec; [(stage, merged spec), ...] for a staged one."""
    data = loaded.data
    if not isinstance(data, dict) or "stages" not in data:
        return [(None, loaded)]
    stages = data["stages"]
    problems = []
    if not isinstance(stages, dict) or not stages:
        raise SpecError([Problem(loaded.value_mark(("stages",)), ("stages",),
                                 "expected a mapping of stage name -> spec sections")])
    base = Loaded(
        data={k: v for k, v in data.items() if k != "stages"},
        key_marks={p: m for p, m in loaded.key_marks.items() if p[:1] != ("stages",)},
        value_marks={p: m for p, m in loaded.value_marks.items() if p[:1] != ("stages",)},
        source=loaded.source,
    )
    spec_name = data.get("name")
    if "name" not in data:
        problems.append(Problem(loaded.key_mark(()), (), "the spec is missing required key 'name'"))
    elif not isinstance(spec_name, str) or not spec_name:
        got = "null" if spec_name is None else repr(spec_name) if isinstance(spec_name, str) else yaml_type(spec_name)
        problems.append(Problem(loaded.value_mark(("name",)), ("name",), "expected a non-empty string (stage runs "
                                f"are named '<name>/<stage>'), got {got}"))
    out: list[tuple[str | None, Loaded]] = []
    for name, body in stages.items():
        path = ("stages", name)
        if not _STAGE_NAME.match(str(name)):
            problems.append(Problem(loaded.key_mark(path), path, "stage names are lower_snake_case"))
            continue
        if not isinstance(body, dict):
            problems.append(Problem(loaded.value_mark(path), path, "expected a mapping of spec sections"))
            continue
        for key in ("stages", "sweep"):
            if key in body:
                problems.append(Problem(loaded.key_mark((*path, key)), (*path, key),
                                        f"'{key}' belongs at the top level, not inside a stage"))
        merged = merge_loaded(base, _sub_loaded(loaded, path, copy_tree(body)))  # copies base
        merged.data["name"] = f"{data.get('name', '')}/{name}"
        out.append((name, merged))
    if problems:
        raise SpecError(problems)
    return out


def validate_plan(loaded: Loaded, schemas: Schemas, memo: CheckMemo | None = None) -> list[Unit]:
    """Validate every stage (or the plain spec); one SpecError with every problem of every stage.
    `memo`: component nodes checked before are not checked again (`framework.validate.CheckMemo`)."""
    units: list[Unit] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    earlier: list[str] = []
    for stage, stage_loaded in stage_specs(loaded):
        try:
            operative = validate(stage_loaded, schemas, memo)
        except SpecError as error:
            for p in error.problems:
                if stage is not None:
                    # written inside the stage: show the full path; else it is a shared key
                    full = ("stages", stage, *p.path)
                    inside = p.mark is not None and p.mark in (loaded.key_marks.get(full), loaded.value_marks.get(full))
                    p = Problem(p.mark, full, p.message) if inside else \
                        Problem(p.mark, p.path, f"{p.message} [in stage '{stage}']")
                if str(p) not in seen:
                    seen.add(str(p))
                    problems.append(p)
            earlier.append(str(stage))
            continue
        init = operative.get("init") or {}
        if init.get("stage") is not None:
            path = ("stages", str(stage), "init", "stage") if stage else ("init", "stage")
            if stage is None:
                problems.append(Problem(loaded.value_mark(path), path, "init.stage needs a spec with stages"))
            elif init["stage"] not in earlier:
                valid = ", ".join(earlier) or "none (this is the first stage)"
                problems.append(Problem(loaded.value_mark(path), path,
                                        f"unknown earlier stage '{init['stage']}'. Earlier stages: {valid}"))
        elif init.get("spec") is not None and loaded.source:
            path = ("stages", str(stage), "init", "spec") if stage else ("init", "spec")
            other = FsPath(loaded.source).parent / init["spec"]
            if not note_exists(other):  # recorded: creating the file invalidates a cached result
                problems.append(Problem(loaded.value_mark(path), path, f"no spec file {other} (init.spec is a path "
                                        f"relative to this spec's folder, {FsPath(loaded.source).parent})"))
        earlier.append(str(stage))
        units.append(Unit(stage, stage_loaded, operative))
    if problems:
        raise SpecError(problems)
    return units


# -- sweeps ---------------------------------------------------------------------------------------

def _short(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _sample(dist: dict[str, Any], rng: random.Random) -> Any:
    kind = dist["distribution"]
    if kind == "choice":
        return rng.choice(dist["values"])
    low, high = dist["low"], dist["high"]
    if kind == "uniform":
        return rng.uniform(low, high)
    if kind == "int_uniform":
        return rng.randint(int(low), int(high))
    return math.exp(rng.uniform(math.log(low), math.log(high)))


# A sweep stands for at most this many trials; its size is computed before any trial is made.
MAX_TRIALS = 100_000


def sweep_size(sweep: dict[str, Any]) -> tuple[int, str]:
    """(number of trials, how it is made up) of a validated `sweep:`, computed without expanding."""
    factors = [(f"grid {' x '.join(str(len(v)) for v in sweep['grid'].values())}", math.prod(map(len, sweep["grid"].values())))
               if sweep["grid"] else None,
               (f"zip {len(next(iter(sweep['zip'].values())))}", len(next(iter(sweep["zip"].values()))))
               if sweep["zip"] else None,
               (f"random.count {sweep['random']['count']}", sweep["random"]["count"]) if sweep["random"] else None,
               (f"seeds {len(sweep['seeds'])}", len(sweep["seeds"])) if sweep["seeds"] else None,
               (f"optuna.trials {sweep['optuna']['trials']}", sweep["optuna"]["trials"]) if sweep["optuna"] else None]
    parts = [f for f in factors if f]
    return math.prod(n for _, n in parts), " x ".join(text for text, _ in parts)


def _parsed_sweep(loaded: Loaded) -> dict[str, Any] | None:
    """The spec's `sweep:` validated and within MAX_TRIALS, or None; else a located SpecError."""
    raw = loaded.data.get("sweep") if isinstance(loaded.data, dict) else None
    if raw is None:
        return None
    from pydantic import ValidationError

    try:
        sweep = Sweep.model_validate(raw).model_dump()
    except ValidationError as error:
        raise SpecError([
            Problem(loaded.value_mark(("sweep", *e["loc"])), ("sweep", *e["loc"]), e["msg"].removeprefix("Value error, "))
            for e in error.errors()
        ]) from None
    size, made_of = sweep_size(sweep)
    if size > MAX_TRIALS:
        path = ("sweep", "random", "count") if sweep["random"] and sweep["random"]["count"] > MAX_TRIALS else ("sweep",)
        raise SpecError([Problem(loaded.value_mark(path), path,
                                 f"{size} trials ({made_of}) is over the cap of {MAX_TRIALS} trials per sweep; "
                                 f"split it into several sweeps or sample it with `random:`")])
    return sweep


def expand_sweep(loaded: Loaded) -> list[Trial]:
    """The trials of the spec's `sweep:` (none if it has no sweep), in the order grid x zip x
    random x seeds, the last varying fastest. Each axis entry is a list of (key, value, override
    text, label value), written once per entry rather than once per trial."""
    sweep = _parsed_sweep(loaded)
    if sweep is None:
        return []
    if sweep["optuna"]:
        return optuna_probes(sweep["optuna"]["params"])
    axes: list[list[list[tuple[str, Any]]]] = []
    if sweep["grid"]:
        axes.append([list(zip(sweep["grid"], combo)) for combo in itertools.product(*sweep["grid"].values())])
    if sweep["zip"]:
        axes.append([list(zip(sweep["zip"], row)) for row in zip(*sweep["zip"].values())])
    if sweep["random"]:
        rng = random.Random(sweep["random"]["seed"])
        params = sweep["random"]["params"]
        axes.append([[(k, _sample(d, rng)) for k, d in params.items()] for _ in range(sweep["random"]["count"])])
    if sweep["seeds"]:
        axes.append([[("seed", s)] for s in sweep["seeds"]])
    written: dict[tuple[str, str], tuple[str, str]] = {}  # (key, repr of value) -> (override, label value)

    def entry(key: str, value: Any) -> tuple[str, Any, str, str]:
        found = written.get((key, repr(value)))
        if found is None:
            found = written[(key, repr(value))] = (f"{key}={dump_line(value)}", _format(value))
        return key, value, *found

    axes_written = [[[entry(k, v) for k, v in part] for part in axis] for axis in axes]
    keys: dict[str, None] = {k: None for axis in axes for k, _ in axis[0]}
    shorts = [_short(k) for k in keys]
    label = {k: k if shorts.count(_short(k)) > 1 else _short(k) for k in keys}
    trials = []
    for combo in itertools.product(*axes_written):
        chosen: dict[str, tuple[str, Any, str, str]] = {}
        for part in combo:
            for item in part:
                chosen[item[0]] = item
        values = {k: v for k, v, _, _ in chosen.values()}
        overrides = ["sweep=null", *(text for _, _, text, _ in chosen.values())]
        name = ",".join(f"{label[k]}={shown}" for k, _, _, shown in chosen.values())
        trials.append(Trial(name=name or "base", values=values, overrides=overrides))
    return trials


def optuna_probes(params: dict[str, Any]) -> list[Trial]:
    """What an `optuna:` search sweep stands for before it runs: its trials are drawn only when a
    worker takes them, so validation and the sweep's identity use two probe trials, every
    parameter at its low end (a choice: its first value) and at its high end (its last)."""
    ends = [{k: d["values"][i] if d["distribution"] == "choice" else
             (int(d["low"]) if i == 0 else int(d["high"])) if d["distribution"] == "int_uniform" else
             (d["low"] if i == 0 else d["high"]) for k, d in params.items()} for i in (0, -1)]
    return [named_trial(values, f"optuna {end}") for values, end in zip(ends, ("low", "high"))]


def named_trial(values: dict[str, Any], fallback: str = "base") -> Trial:
    """The trial that sets these override paths to these values, named by them (`lr=0.001`)."""
    shorts = [_short(k) for k in values]
    label = {k: k if shorts.count(_short(k)) > 1 else _short(k) for k in values}
    return Trial(name=",".join(f"{label[k]}={_format(v)}" for k, v in values.items()) or fallback,
                 values=dict(values), overrides=["sweep=null", *(f"{k}={dump_line(v)}" for k, v in values.items())])


class SweepChecker:
    """The trials of a sweep spec, validated in one pass.

    The spec file is loaded (its `extends` merged) and the caller's overrides applied once; the
    spec without its sweep is resolved and validated once. A trial then copies only the containers
    on the paths its overrides set, applies them, resolves the top-level keys its overrides reach
    (directly, or through a `${...}` reference, followed transitively; the other keys are taken
    resolved from the base) and validates with a CheckMemo, so a component node that did not change
    is not checked again. The result is the operative spec `load_spec` + `validate_plan` give for
    the spec with the trial's overrides (a test compares both on every landed sweep spec); a trial
    with a problem is loaded again that way, for the located message. Staged specs take that way
    for every trial. Hashes computed from these units are the ones `exp run` computes.
    """

    def __init__(self, spec_path: str | FsPath, overrides: list[str], schemas: Schemas,
                 memo: CheckMemo | None = None, with_sweep: Loaded | None = None,
                 files: SpecFiles | None = None) -> None:
        """`with_sweep`: the spec as `load_spec(spec_path, overrides)` gives it, when the caller
        has it (`exp validate` has just checked it), so that it is not resolved again; it is read,
        never changed. `files`: the files the command has read (`framework.loader.SpecFiles`)."""
        self.spec_path, self.overrides, self.schemas = spec_path, list(overrides), schemas
        self.memo = memo or CheckMemo()
        self.files = files or SpecFiles()
        loaded = load_file(spec_path, files=self.files)
        apply_overrides(loaded, self.overrides)
        if with_sweep is None:
            with_sweep = loaded.copy()
            resolve_references(with_sweep)
        self.trials = expand_sweep(with_sweep)
        self.sweep = _parsed_sweep(with_sweep) if self.trials else None
        # where each sweep axis is written: a trial's mistake is reported on that line
        self.axis_marks = {path[-1]: mark for path, mark in with_sweep.key_marks.items()
                           if path[:1] == ("sweep",) and (len(path) == 3 or path[1:3] == ("random", "params"))}
        apply_overrides(loaded, ["sweep=null"])
        self.unresolved = loaded
        self.resolved = loaded.copy()
        resolve_references(self.resolved)
        self.base = validate_plan(self.resolved, schemas, self.memo)
        self.references = _references(loaded.data)
        self.staged = isinstance(loaded.data, dict) and "stages" in loaded.data

    def units(self, trial: Trial) -> list[Unit]:
        """The trial's units (stages), or a SpecError located in the spec or the override."""
        if not self.staged:
            try:
                return self._fast_units(trial)
            except SpecError:
                pass  # loaded again below, with the marks its message needs
        return validate_plan(load_spec(self.spec_path, [*self.overrides, *trial.overrides], files=self.files),
                             self.schemas, self.memo)

    def _fast_units(self, trial: Trial) -> list[Unit]:
        settings = [o for o in trial.overrides if o != "sweep=null"]  # in the order of trial.values
        paths = [tuple(key_parts(key)) for key in trial.values]
        loaded = Loaded(_copy_along(self.unresolved.data, paths), {}, {}, self.unresolved.source)
        # the values themselves: `key=dump_line(value)` reads back as `value`, with no YAML parse
        problems = [p for (key, value), text in zip(trial.values.items(), settings)
                    if (p := set_value(loaded, key, copy_tree(value), Mark(f"override '{text}'")))]
        if problems:
            raise SpecError(problems)
        reached = _reached(paths, self.references)
        loaded.data = {k: v if k in reached else self.resolved.data[k] for k, v in loaded.data.items()}
        resolve_references(loaded, only=reached)
        return validate_plan(loaded, self.schemas, self.memo)

    def _located(self, problem: Problem, trial: Trial) -> Problem:
        """A trial's problem; one that its own setting caused (the mark of a trial override) is
        moved to the line of the sweep axis that wrote the setting."""
        for setting in trial.overrides:
            key = setting.partition("=")[0].strip()
            mark = self.axis_marks.get(key)
            if mark is not None and problem.mark is not None and problem.mark.source == f"override '{setting}'":
                return Problem(mark, problem.path, f"sweep axis {setting}: {problem.message} [trial {trial.name}]")
        return Problem(problem.mark, problem.path, f"{problem.message} [trial {trial.name}]")

    def check(self, each: Callable[[list[Unit]], None] = lambda units: None, limit: int = 10) -> list[Problem]:
        """Every trial's problems, each marked with its trial; `each(units)` is called for every
        valid trial, in order (its SpecError counts as the trial's). After `limit` failing trials,
        one line says how many more failed."""
        problems: list[Problem] = []
        failed = 0
        for trial in self.trials:
            try:
                each(self.units(trial))
            except SpecError as error:
                failed += 1
                if failed <= limit:
                    problems += [self._located(p, trial) for p in error.problems]
        if failed > limit:
            problems.append(Problem(None, (), f"... and {failed - limit} more trial(s) of {len(self.trials)} with problems"))
        return problems


def _copy_along(data: Any, paths: list[tuple[str, ...]]) -> Any:
    """`data` with every mapping and list on the given key paths copied (shallowly), so that
    setting those paths leaves `data` as it was; everything off the paths is shared."""
    root = dict(data) if isinstance(data, dict) else data
    for parts in paths:
        node = root
        for part in parts[:-1]:
            if isinstance(node, dict) and isinstance(node.get(part), (dict, list)):
                key: str | int = part
            elif isinstance(node, list) and (index := list_index(part, len(node))) is not None:
                key = index
                if not isinstance(node[key], (dict, list)):
                    break
            else:
                break
            node[key] = dict(node[key]) if isinstance(node[key], dict) else list(node[key])
            node = node[key]
    return root


def _references(data: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(where, key path it refers to) of every `${...}` reference in `data`, paths as strings."""
    if isinstance(data, dict):
        return [r for k, v in data.items() for r in _references(v, (*path, str(k)))]
    if isinstance(data, list):
        return [r for i, v in enumerate(data) for r in _references(v, (*path, str(i)))]
    if isinstance(data, str) and "${" in data:
        return [(path, tuple(key_parts(target))) for target in reference_targets(data)]
    return []


def _reached(paths: list[tuple[str, ...]], references: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> set[str]:
    """The top-level keys whose resolved value may change when `paths` are set: those the paths
    start with, and those holding a reference to a changed path (one path inside the other),
    transitively."""
    changed = list(paths)
    pending = list(references)
    grew = True
    while grew:
        grew = False
        for where, target in list(pending):
            if any(target[: len(c)] == c or c[: len(target)] == target for c in changed):
                changed.append(where)
                pending.remove((where, target))
                grew = True
    return {c[0] for c in changed if c}


def _format(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
        return text if any(c in text for c in ".ein") else f"{text}.0"
    return str(value)
