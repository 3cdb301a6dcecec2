"""The claims file, `specs/<paper>/claims.yaml`: its types and `load_claims`, which checks it.

Kinds: every claim says what it is. `headline`: the paper's main result, at tiny scale;
`supporting`: another result of the paper we reproduce; `deviation`: a result of the paper we
checked and did not reproduce. The check of a deviation states the paper's result; it is expected
to be false, reported as NOT REPRODUCED with its numbers, and never counted as a pass (nor does
it fail `exp reproduce`). When the paper's main result is what did not reproduce, its deviation
says `headline: true`. A file has at least one headline: a `headline` claim or such a deviation.

Seeds: a headline claim states `over: mean` (the check is on the mean over seeds; the table shows
each seed's value) or `over: every_seed` (it holds for each seed), and every run it reads is a
sweep over at least three `seeds`. Where such a run starts from another spec's weights
(`init: {spec}`), the upstream must follow the trial's seed: loaded for two of the trial's seeds,
it comes out different (`init.overrides: ['seed=${seed}']`, or any override that depends on the
seed), so that the claim holds over seeds of everything random that feeds it.

Headline: a file has one headline, the abstract's own main result: its claims (`kind: headline`,
or a deviation with `headline: true`) each quote in `paper_says:` the abstract's words they test,
the same words in each (tests/specs/test_paper_readmes.py checks that the words are the
abstract's, quoted in the paper's README).

Floors: a claim that a method beats a baseline may name the trivial answer it must beat too,
`floor: {text, check}` (persistence, chance, the majority class, the untrained model): a claim
whose floor check is false fails, one whose floor is undecided is inconclusive.

Timing: a claim that reads wall-clock measurements (a penalty's forward+backward time) says
`timing: true`; its numbers differ from run to run, so a README's table is compared with a fresh
run on its result only for that row (framework.claims.report.table_differences). Its check needs
a margin far outside timing noise (a ratio of 10x where 100x is measured).

Inconclusive: `level` (default 0.95) is the confidence of `margin()` and `paired_margin()`; a check
the results cannot decide (a margin within the seeds' noise, an optimum at the grid's edge) makes
its claim inconclusive (framework.claims.evidence).

Controls: every claim names a negative control, results on which the same check must be false:
`control: {text, replace: {alias: other_alias}}` evaluates the check with those runs swapped
(an unregularized baseline for the method, a random mask for the learned one), or
`control: {text, numbers: {alias: {metric: value}}}` (a sweep alias: a list of such mappings, with
`values` for `param()`) gives made-up results (a curve without the predicted shape);
`control: {text, stages: {stage: other_stage}}` reads, in every run, a staged spec's stage
`other_stage` where the check reads `stage` (`'cvm15:test/x'` becomes `'base:test/x'`: the
unregularized stage of the same runs, seeds and data in place of the method's). Only `replace`
and `stages` controls are run controls: made-up numbers test the check expression, not the claim, and
the table says so ("no run control"). A claim whose control also passes cannot fail:
`exp reproduce` reports it and fails.

Recorded results: `verify:` lists the metrics whose re-run may differ from the recording (see
framework.claims.record), each with its reason: `{metrics: 'test/ms_*', why: ..., compare: false}`
(wall-clock time) or `{metrics: ..., why: ..., rel: 1e-6, abs: 0}`. Every other metric must be
bit-identical.

Tiers: a run alias and a claim carry `tier: default` (when omitted) or `tier: full`.
`exp reproduce` obtains the default-tier runs and checks the default-tier claims;
`exp reproduce --full` does all of them. A default-tier claim may read only default-tier runs,
so that the default tier is complete on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from framework.claims.evidence import DEFAULT_LEVEL
from framework.claims.expressions import parse_check, used_aliases
from framework.discovery import CLAIMS_FILE
from framework.errors import Problem, SpecError
from framework.loader import SpecFiles, apply_overrides, load_file, load_spec
from framework.marked_yaml import Loaded
from framework.validate_cache import note_exists

DEFAULT_TIER, FULL_TIER = "default", "full"
Tier = Literal["default", "full"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RunRef(_Closed):
    """A run a claim reads: a spec of the paper's folder (a sweep spec stands for its trials)."""

    spec: str
    overrides: list[str] = []
    tier: Tier = DEFAULT_TIER


class Control(_Closed):
    """A negative control: results on which the claim's check must be false (module docstring)."""

    text: str = Field(min_length=1)
    replace: dict[str, str] = {}
    stages: dict[str, str] = Field(default={}, max_length=64)
    numbers: dict[str, dict[str, Any] | list[dict[str, Any]]] = {}

    @property
    def is_run(self) -> bool:
        """Whether the control is made of real runs (`replace`, `stages`), not made-up numbers."""
        return bool(self.replace or self.stages)


class Floor(_Closed):
    """The trivial answer a method must beat for its win to mean anything (persistence, chance, the
    majority class, the untrained model): a check that holds when the method is above it."""

    text: str = Field(min_length=1)
    check: str


class Claim(_Closed):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    kind: Literal["headline", "supporting", "deviation"]
    text: str
    check: str
    control: Control
    over: Literal["mean", "every_seed"] | None = None
    headline: bool = False  # a deviation that is the paper's headline (module docstring)
    paper_says: str | None = Field(default=None, min_length=1)  # the abstract's words a headline tests
    floor: Floor | None = None
    timing: bool = False  # reads wall-clock times: its numbers differ from run to run (module docstring)
    tier: Tier = DEFAULT_TIER

    @property
    def is_headline(self) -> bool:
        return self.kind == "headline" or self.headline


class VerifyRule(_Closed):
    """How a re-run must match the recorded value of the metrics a glob names (framework.claims.record):
    `compare: false` (not compared: wall-clock time) or within `rel`/`abs` (math.isclose), and why."""

    metrics: str = Field(min_length=1)
    why: str = Field(min_length=10)
    compare: bool = True
    rel: float = Field(default=0.0, ge=0.0)
    abs: float = Field(default=0.0, ge=0.0)


class ClaimsFile(_Closed):
    paper: str = Field(pattern=r"^[a-z0-9_]+$")
    level: float = Field(default=DEFAULT_LEVEL, ge=0.5, lt=1.0)  # confidence of margin() intervals
    verify: list[VerifyRule] = []  # exceptions to bit-identical re-runs of the recorded results
    runs: dict[str, RunRef]
    claims: list[Claim] = Field(min_length=1)


def in_tier(tier: str, full: bool) -> bool:
    """Whether a run or claim of this tier is part of a reproduction (`full`: `--full`)."""
    return full or tier == DEFAULT_TIER


def load_claims(folder: str | Path, files: SpecFiles | None = None) -> tuple[ClaimsFile, Loaded]:
    """Read and check `<folder>/claims.yaml`: its structure, that `paper` is the folder's name,
    that every run's spec file exists, that every check parses and reads only declared runs, and
    that no default-tier claim reads a full-tier run. One SpecError lists every problem, each at
    its file:line:col. `files`: the files the command has read (`framework.loader.SpecFiles`)."""
    files = files or SpecFiles()
    path = Path(folder) / CLAIMS_FILE
    if not path.is_file():
        raise SpecError([Problem(None, (), f"{path}: no claims file (a paper folder states its claims in {CLAIMS_FILE})")])
    loaded = load_file(path, shape="a claims file is a mapping with 'paper', 'runs' and 'claims'", files=files)
    claims = _structure(loaded)
    reads, problems = _checks(claims, loaded)  # the runs each check reads, by claim index
    problems = _paper_and_runs(claims, loaded, path.parent) + problems
    problems += _kinds_and_controls(claims, loaded, reads)
    if not problems:
        problems += _headline_seeds(claims, loaded, path.parent, reads, files)
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
    name = folder.absolute().name  # `exp validate claims.yaml` inside the folder: its parent is '.'
    if claims.paper != name:
        problems.append(Problem(loaded.value_mark(("paper",)), ("paper",),
                                f"paper '{claims.paper}' differs from the folder name '{name}'"))
    for alias, ref in claims.runs.items():
        if not note_exists(folder / ref.spec):
            problems.append(Problem(loaded.value_mark(("runs", alias, "spec")), ("runs", alias, "spec"),
                                    f"spec file not found: {folder / ref.spec}"))
    return problems


def _checks(claims: ClaimsFile, loaded: Loaded) -> tuple[dict[int, set[str]], list[Problem]]:
    """The runs each check reads, by claim index (a check that does not parse is a problem instead)."""
    problems, reads = [], {}
    aliases = set(claims.runs)
    for i, claim in enumerate(claims.claims):
        path = ("claims", i, "check")
        try:
            read = reads[i] = used_aliases(parse_check(claim.check, aliases), aliases)
        except ValueError as error:
            problems.append(Problem(loaded.value_mark(path), path, str(error)))
            continue
        if claim.floor is not None:
            floor_path = ("claims", i, "floor", "check")
            try:
                read = read | used_aliases(parse_check(claim.floor.check, aliases), aliases)
            except ValueError as error:
                problems.append(Problem(loaded.value_mark(floor_path), floor_path, str(error)))
        if claim.tier == DEFAULT_TIER:
            for alias in sorted(read):
                if claims.runs[alias].tier != DEFAULT_TIER:
                    problems.append(Problem(loaded.value_mark(path), path, (
                        f"claim '{claim.name}' is in the default tier but reads run '{alias}', which is "
                        f"`tier: {claims.runs[alias].tier}` (line {_line(loaded, ('runs', alias))}); "
                        f"mark the claim `tier: {claims.runs[alias].tier}`, or the run `tier: default`")))
    return reads, problems


MIN_SEEDS = 3


def _kinds_and_controls(claims: ClaimsFile, loaded: Loaded, reads: dict[int, set[str]]) -> list[Problem]:
    """At least one headline; `over` on every headline; each control names runs the check reads."""
    problems = []
    if not any(c.is_headline for c in claims.claims):
        problems.append(Problem(loaded.key_mark(("claims",)), ("claims",),
                                "no claim is `kind: headline`; mark the paper's main result at tiny scale "
                                "(or, when it did not reproduce, its deviation `headline: true`)"))
    quoted = {c.paper_says for c in claims.claims if c.is_headline and c.paper_says}
    for i, claim in enumerate(claims.claims):
        if claim.is_headline and not claim.paper_says and claim.kind in ("headline", "deviation"):
            problems.append(Problem(loaded.key_mark(("claims", i)), ("claims", i), (
                f"headline claim '{claim.name}' needs `paper_says:`, the abstract's own words it tests (a claim "
                "whose statement is not in the abstract is `kind: supporting`)")))
        elif claim.is_headline and len(quoted) > 1:
            problems.append(Problem(loaded.key_mark(("claims", i, "paper_says")), ("claims", i, "paper_says"), (
                f"a paper has one headline, but its headline claims quote {len(quoted)} different `paper_says:`; "
                "headline claims test parts of one sentence of the abstract (quote it in each), the others are "
                "`kind: supporting`")))
        if claim.headline and claim.kind != "deviation":
            problems.append(Problem(loaded.key_mark(("claims", i, "headline")), ("claims", i, "headline"),
                                    "`headline: true` marks a deviation; a reproduced main result is `kind: headline`"))
        if claim.is_headline and claim.over is None:
            problems.append(Problem(loaded.key_mark(("claims", i)), ("claims", i),
                                    f"headline claim '{claim.name}' needs `over: mean` or `over: every_seed` "
                                    f"(how it holds over >= {MIN_SEEDS} seeds)"))
        problems += _control_problems(claim, i, claims.runs, loaded, reads.get(i))
    return problems


def _control_problems(claim: Claim, index: int, runs: dict[str, RunRef], loaded: Loaded,
                      read: set[str] | None) -> list[Problem]:
    """A control gives one of `replace` / `numbers`, about runs the check reads; a default-tier
    claim's control swaps in default-tier runs only (the default tier is complete on its own)."""
    path = ("claims", index, "control")
    control = claim.control
    aliases = set(runs)
    if control.is_run == bool(control.numbers):
        return [Problem(loaded.key_mark(path), path, "a control gives either runs (`replace`, `stages`) or `numbers`")]
    if read is None:
        return []  # the check does not parse: its own problem is reported by _checks
    problems = []
    for alias, other in control.replace.items():
        for name, where in ((alias, "replaces"), (other, "uses")):
            if name not in aliases:
                problems.append(Problem(loaded.value_mark((*path, "replace")), (*path, "replace"),
                                        f"the control {where} '{name}', which is not a run. Runs: {', '.join(sorted(aliases))}"))
        if alias in aliases and alias not in read:
            problems.append(Problem(loaded.value_mark((*path, "replace")), (*path, "replace"),
                                    f"the control replaces '{alias}', which the check does not read"))
        if claim.tier == DEFAULT_TIER and other in aliases and runs[other].tier != DEFAULT_TIER:
            problems.append(Problem(loaded.value_mark((*path, "replace")), (*path, "replace"),
                                    f"claim '{claim.name}' is in the default tier but its control uses run '{other}', "
                                    f"which is `tier: {runs[other].tier}`"))
    for alias in control.numbers:
        if alias not in read:
            problems.append(Problem(loaded.value_mark((*path, "numbers")), (*path, "numbers"),
                                    f"the control gives numbers for '{alias}', which the check does not read"))
    return problems


def _headline_seeds(claims: ClaimsFile, loaded: Loaded, folder: Path,
                    reads: dict[int, set[str]], files: SpecFiles) -> list[Problem]:
    """Every run a headline claim reads is a sweep over >= MIN_SEEDS seeds whose upstream specs,
    if any, follow the trial's seed (upstreams of upstreams too). Each run is looked at once, and
    each (spec, overrides) loaded once, however many headline claims read it."""
    problems = []
    found: dict[str, tuple[list[Any], str | None]] = {}  # alias -> (seeds, upstream pinning one seed)
    loads = _Loads(files)
    for i, claim in enumerate(claims.claims):
        if not claim.is_headline:
            continue
        for alias in sorted(reads[i]):
            ref = claims.runs[alias]
            if alias not in found:
                found[alias] = _seeds_and_pinning(folder / ref.spec, list(ref.overrides), loads)
            seeds, pinned = found[alias]
            message = None
            if len(seeds) < MIN_SEEDS:
                message = (f"headline claim '{claim.name}' reads '{alias}' ({ref.spec}), which is not a sweep over "
                           f">= {MIN_SEEDS} seeds (sweep.seeds: {seeds or 'none'})")
            elif pinned:
                message = (f"headline claim '{claim.name}' reads '{alias}' ({ref.spec}), whose upstream {pinned} keeps "
                           f"one seed; let it follow the trial's: init: {{spec: ..., overrides: ['seed=${{seed}}']}}")
            if message:
                problems.append(Problem(loaded.value_mark(("claims", i, "check")), ("claims", i, "check"), message))
    return problems


def _seeds_and_pinning(spec: Path, overrides: list[str], loads: _Loads) -> tuple[list[Any], str | None]:
    """The run's `sweep.seeds`, and (with >= MIN_SEEDS of them) its upstream that keeps one seed."""
    raw = load_file(spec, files=loads.files)
    apply_overrides(raw, overrides)
    seeds = ((raw.data.get("sweep") or {}).get("seeds")) or []
    if len(seeds) < MIN_SEEDS:
        return seeds, None
    first, second = ([*overrides, "sweep=null", f"seed={seed}"] for seed in seeds[:2])
    return seeds, _upstream_pinning_seed(spec, first, second, loads)


def _inits(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where, `init` mapping) at the top level and in each stage."""
    stages = data.get("stages") if isinstance(data.get("stages"), dict) else {}
    return [("", data.get("init")),
            *((name, (s or {}).get("init")) for name, s in stages.items() if isinstance(s, dict))]


class _Loads:
    """`load_spec(spec, overrides).data`, once per (spec, overrides) of one claims file, its files
    read through the command's `files`; a spec that does not load raises its SpecError each time.
    The data is shared: read it, never change it."""

    def __init__(self, files: SpecFiles) -> None:
        self.files = files
        self._data: dict[tuple[Path, tuple[str, ...]], Any] = {}

    def data(self, spec: Path, overrides: list[str]) -> Any:
        key = (spec, tuple(overrides))
        if key not in self._data:
            try:
                self._data[key] = load_spec(spec, overrides, files=self.files).data
            except SpecError as error:
                self._data[key] = error
        if isinstance(self._data[key], SpecError):
            raise self._data[key]
        return self._data[key]


def _upstream_pinning_seed(spec: Path, first: list[str], second: list[str], loads: _Loads,
                           seen: frozenset[Path] = frozenset()) -> str | None:
    """The first upstream spec (`init: {spec}`, top level or in a stage, followed down its own
    upstreams) that comes out the same for two of the trial's seeds: `spec` loaded with the
    overrides `first` and `second` (two seeds), references resolved. Any way of following the seed
    counts (`seed=${seed}`, `data.seed=${seed}`, ...); None when every upstream follows it. A spec
    that does not load is its own error, reported when it runs."""
    try:
        one, two = loads.data(spec, first), loads.data(spec, second)
    except SpecError:
        return None
    for (where, init), (_, other) in zip(_inits(one), _inits(two)):
        if not isinstance(init, dict) or not init.get("spec") or not isinstance(other, dict):
            continue
        upstream = spec.parent / str(init["spec"])
        if upstream.resolve() in seen or not note_exists(upstream):
            continue  # a cycle or a missing file is the spec's own error
        up_first = [str(o) for o in init.get("overrides") or []]
        up_second = [str(o) for o in other.get("overrides") or []]
        try:
            same = loads.data(upstream, up_first) == loads.data(upstream, up_second)
        except SpecError:
            continue
        if same:
            return str(init["spec"])
        deeper = _upstream_pinning_seed(upstream, up_first, up_second, loads, seen | {upstream.resolve()})
        if deeper:
            return deeper
    return None


def _line(loaded: Loaded, path: tuple) -> str:
    mark = loaded.key_mark(path)
    return str(mark.line) if mark is not None and mark.line is not None else "?"
