"""The claims file, `specs/<paper>/claims.yaml`: its types and `load_claims`, which checks it.

Tiers: a run alias and a claim carry `tier: default` (when omitted) or `tier: full`.
`exp reproduce` obtains the default-tier runs and checks the default-tier claims;
`exp reproduce --full` does all of them. A default-tier claim may read only default-tier runs,
so that the default tier is complete on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from framework.claims.expressions import parse_check, used_aliases
from framework.errors import Problem, SpecError
from framework.loader import Loaded, load_file

CLAIMS_FILE = "claims.yaml"
DEFAULT_TIER, FULL_TIER = "default", "full"
Tier = Literal["default", "full"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RunRef(_Closed):
    """A run a claim reads: a spec of the paper's folder (a sweep spec stands for its trials)."""

    spec: str
    overrides: list[str] = []
    tier: Tier = DEFAULT_TIER


class Claim(_Closed):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    text: str
    check: str
    tier: Tier = DEFAULT_TIER


class ClaimsFile(_Closed):
    paper: str = Field(pattern=r"^[a-z0-9_]+$")
    runs: dict[str, RunRef]
    claims: list[Claim] = Field(min_length=1)


def in_tier(tier: str, full: bool) -> bool:
    """Whether a run or claim of this tier is part of a reproduction (`full`: `--full`)."""
    return full or tier == DEFAULT_TIER


def load_claims(folder: str | Path) -> tuple[ClaimsFile, Loaded]:
    """Read and check `<folder>/claims.yaml`: its structure, that `paper` is the folder's name,
    that every run's spec file exists, that every check parses and reads only declared runs, and
    that no default-tier claim reads a full-tier run. One SpecError lists every problem, each at
    its file:line:col."""
    path = Path(folder) / CLAIMS_FILE
    if not path.is_file():
        raise SpecError([Problem(None, (), f"{path}: no claims file (a paper folder states its claims in {CLAIMS_FILE})")])
    loaded = load_file(path)
    claims = _structure(loaded)
    problems = _paper_and_runs(claims, loaded, path.parent) + _checks(claims, loaded)
    if problems:
        raise SpecError(problems)
    return claims, loaded


def _structure(loaded: Loaded) -> ClaimsFile:
    try:
        return ClaimsFile.model_validate(loaded.data)
    except ValidationError as error:
        raise SpecError([
            Problem(loaded.key_mark(tuple(e["loc"])) if e["type"] in ("extra_forbidden", "missing")
                    else loaded.value_mark(tuple(e["loc"])), tuple(e["loc"]), e["msg"])
            for e in error.errors()
        ]) from None


def _paper_and_runs(claims: ClaimsFile, loaded: Loaded, folder: Path) -> list[Problem]:
    problems = []
    if claims.paper != folder.name:
        problems.append(Problem(loaded.value_mark(("paper",)), ("paper",),
                                f"paper '{claims.paper}' differs from the folder name '{folder.name}'"))
    for alias, ref in claims.runs.items():
        if not (folder / ref.spec).is_file():
            problems.append(Problem(loaded.value_mark(("runs", alias, "spec")), ("runs", alias, "spec"),
                                    f"spec file not found: {folder / ref.spec}"))
    return problems


def _checks(claims: ClaimsFile, loaded: Loaded) -> list[Problem]:
    problems = []
    aliases = set(claims.runs)
    for i, claim in enumerate(claims.claims):
        path = ("claims", i, "check")
        try:
            tree = parse_check(claim.check, aliases)
        except ValueError as error:
            problems.append(Problem(loaded.value_mark(path), path, str(error)))
            continue
        if claim.tier == DEFAULT_TIER:
            for alias in sorted(used_aliases(tree, aliases)):
                if claims.runs[alias].tier != DEFAULT_TIER:
                    problems.append(Problem(loaded.value_mark(path), path, (
                        f"claim '{claim.name}' is in the default tier but reads run '{alias}', which is "
                        f"`tier: {claims.runs[alias].tier}` (line {_line(loaded, ('runs', alias))}); "
                        f"mark the claim `tier: {claims.runs[alias].tier}`, or the run `tier: default`")))
    return problems


def _line(loaded: Loaded, path: tuple) -> str:
    mark = loaded.key_mark(path)
    return str(mark.line) if mark is not None and mark.line is not None else "?"
