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

import copy
import itertools
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from framework.errors import Problem, SpecError
from framework.loader import Loaded, merge_loaded
from framework.spec import Sweep
from framework.validate import Schemas, validate, yaml_type

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
        merged = merge_loaded(copy.deepcopy(base), _sub_loaded(loaded, path, copy.deepcopy(body)))
        merged.data["name"] = f"{data.get('name', '')}/{name}"
        out.append((name, merged))
    if problems:
        raise SpecError(problems)
    return out


def validate_plan(loaded: Loaded, schemas: Schemas) -> list[Unit]:
    """Validate every stage (or the plain spec); one SpecError with every problem of every stage."""
    units: list[Unit] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    earlier: list[str] = []
    for stage, stage_loaded in stage_specs(loaded):
        try:
            operative = validate(stage_loaded, schemas)
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
        earlier.append(str(stage))
        units.append(Unit(stage, stage_loaded, operative))
    if problems:
        raise SpecError(problems)
    return units


# -- sweeps ---------------------------------------------------------------------------------------

def _dump(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip().removesuffix("\n...")


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


def expand_sweep(loaded: Loaded) -> list[Trial]:
    """The trials of the spec's `sweep:` (none if it has no sweep)."""
    raw = loaded.data.get("sweep") if isinstance(loaded.data, dict) else None
    if raw is None:
        return []
    from pydantic import ValidationError

    try:
        sweep = Sweep.model_validate(raw).model_dump()
    except ValidationError as error:
        raise SpecError([
            Problem(loaded.value_mark(("sweep", *e["loc"])), ("sweep", *e["loc"]), e["msg"].removeprefix("Value error, "))
            for e in error.errors()
        ]) from None
    axes: list[list[dict[str, Any]]] = []
    if sweep["grid"]:
        keys = list(sweep["grid"])
        axes.append([dict(zip(keys, combo)) for combo in itertools.product(*sweep["grid"].values())])
    if sweep["zip"]:
        keys = list(sweep["zip"])
        axes.append([dict(zip(keys, row)) for row in zip(*sweep["zip"].values())])
    if sweep["random"]:
        rng = random.Random(sweep["random"]["seed"])
        params = sweep["random"]["params"]
        axes.append([{k: _sample(d, rng) for k, d in params.items()} for _ in range(sweep["random"]["count"])])
    if sweep["seeds"]:
        axes.append([{"seed": s} for s in sweep["seeds"]])
    trials = []
    for combo in itertools.product(*axes):
        values: dict[str, Any] = {}
        for part in combo:
            values.update(part)
        shorts = [_short(k) for k in values]
        label = ",".join(
            f"{k if shorts.count(_short(k)) > 1 else _short(k)}={_format(v)}" for k, v in values.items()
        )
        overrides = ["sweep=null", *(f"{k}={_dump(v)}" for k, v in values.items())]
        trials.append(Trial(name=label or "base", values=values, overrides=overrides))
    return trials


def _format(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
        return text if any(c in text for c in ".ein") else f"{text}.0"
    return str(value)
