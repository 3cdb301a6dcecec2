"""Claims: a paper folder's qualitative results, stated declaratively and checked by `exp reproduce`.

`specs/<paper>/claims.yaml`:

    paper: cvm_fairness
    runs:                                   # alias -> a spec of this folder (+ overrides)
      base: {spec: tiny_unregularized.yaml}
      cvm: {spec: tiny.yaml}
      lam: {spec: sweep_lambda.yaml}        # a spec with a sweep: the list of its trials
    claims:
      - name: dp_gap_reduced
        text: CvM cuts the DP gap to <= 0.7x the unregularized run's at accuracy >= 0.75
        check: cvm['test/demographic_parity_gap'] <= 0.7 * base['test/demographic_parity_gap'] and cvm['test/accuracy'] >= 0.75

A check is an expression in a small, safe language (no attribute access, no imports, nothing
but what is listed here): numbers and strings; `+ - * / **`; comparisons; `and or not`; lists;
`alias['metric']` (the run's final metric; a staged spec's metrics are `'stage:metric'`);
and the functions in `FUNCTIONS` (`column(alias, 'metric')` and `param(alias, 'key')` give a
sweep's values in trial order).

`exp reproduce specs/<paper>/` obtains every run (reusing finished runs with the same
operative-spec hash, unless --fresh), evaluates the claims, prints a table, logs it to MLflow,
optionally rewrites the table in the folder's README.md between `<!-- claims:begin -->` and
`<!-- claims:end -->`, and exits non-zero when a claim fails.
"""

from __future__ import annotations

import ast
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from framework.errors import Problem, SpecError
from framework.loader import Loaded, load_file

CLAIMS_FILE = "claims.yaml"
BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class RunRef(_Closed):
    spec: str
    overrides: list[str] = []


class Claim(_Closed):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    text: str
    check: str


class ClaimsFile(_Closed):
    paper: str = Field(pattern=r"^[a-z0-9_]+$")
    runs: dict[str, RunRef]
    claims: list[Claim] = Field(min_length=1)


def _slope(xs: list[float], ys: list[float]) -> float:
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"slope needs two equal-length lists of >= 2 values, got {len(xs)} and {len(ys)}")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def _loglog_slope(xs: list[float], ys: list[float]) -> float:
    return _slope([math.log(x) for x in xs], [math.log(y) for y in ys])


def _r2(xs: list[float], ys: list[float]) -> float:
    """R^2 of the least-squares line through (xs, ys)."""
    b = _slope(xs, ys)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    residual = sum((y - (my + b * (x - mx))) ** 2 for x, y in zip(xs, ys))
    total = sum((y - my) ** 2 for y in ys)
    return 1.0 - residual / total if total else 1.0


def _non_increasing(xs: list[float], slack: float = 0.0) -> bool:
    return all(b <= a + slack for a, b in zip(xs, xs[1:]))


def _non_decreasing(xs: list[float], slack: float = 0.0) -> bool:
    return all(b >= a - slack for a, b in zip(xs, xs[1:]))


def _data_constrained_r2(unique: list[float], total: list[float], values: list[float]) -> float:
    from components.fit.data_constrained import data_constrained_r2

    return data_constrained_r2(unique, total, values)


# name -> (function, one-line description); the only callables a check can use.
FUNCTIONS: dict[str, tuple[Callable[..., Any], str]] = {
    "abs": (abs, "absolute value"),
    "min": (min, "smallest of a list or of the arguments"),
    "max": (max, "largest of a list or of the arguments"),
    "mean": (lambda xs: statistics.fmean(xs), "mean of a list"),
    "log": (math.log, "natural logarithm"),
    "sqrt": (math.sqrt, "square root"),
    "len": (len, "length of a list"),
    "slope": (_slope, "least-squares slope of ys against xs"),
    "loglog_slope": (_loglog_slope, "least-squares slope of log ys against log xs"),
    "r2": (_r2, "R^2 of the least-squares line"),
    "non_increasing": (_non_increasing, "each value <= the previous + slack"),
    "non_decreasing": (_non_decreasing, "each value >= the previous - slack"),
    "data_constrained_r2": (_data_constrained_r2, "R^2 of FVU = E + A (D'(U,T;R*)/T)^-alpha (Muennighoff's "
                            "effective data) fitted over unique-data sizes U at budget T"),
    "column": (None, "column(sweep, 'metric'): the metric of every trial, in trial order"),
    "param": (None, "param(sweep, 'key'): the swept value of every trial, in trial order"),
}

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Compare, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq,
    ast.NotEq, ast.Constant, ast.Name, ast.Load, ast.Subscript, ast.Call, ast.List, ast.Tuple,
)


def parse_check(text: str, aliases: set[str]) -> ast.Expression:
    """Parse and vet a check: only the listed syntax, known aliases and functions."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise ValueError(f"invalid check syntax{where}: {error.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"'{ast.unparse(node)}' is not allowed in a check ({type(node).__name__})")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ValueError(f"unknown function call '{ast.unparse(node)}'. Functions: {', '.join(FUNCTIONS)}")
        elif isinstance(node, ast.Name) and node.id not in aliases and node.id not in FUNCTIONS \
                and node.id not in ("True", "False"):
            import difflib

            match = difflib.get_close_matches(node.id, sorted(aliases), n=1)
            hint = f" Did you mean '{match[0]}'?" if match else f" Runs: {', '.join(sorted(aliases))}."
            raise ValueError(f"unknown run '{node.id}'.{hint}")
    return tree


@dataclass
class Outcome:
    claim: Claim
    passed: bool
    numbers: dict[str, Any] = field(default_factory=dict)
    error: str = ""


def evaluate(claim: Claim, results: dict[str, Any]) -> Outcome:
    """Evaluate one claim against obtained results (RunResult, or a list of them for sweeps)."""
    numbers: dict[str, Any] = {}
    tree = parse_check(claim.check, set(results))

    def metric(alias: str, result: Any, key: str) -> float:
        if isinstance(result, list):
            raise ValueError(f"'{alias}' is a sweep: use column({alias}, '{key}')")
        if key not in result.metrics:
            import difflib

            match = difflib.get_close_matches(key, sorted(result.metrics), n=1)
            hint = f" Did you mean '{match[0]}'?" if match else ""
            raise ValueError(f"run '{alias}' has no metric '{key}'.{hint}")
        value = result.metrics[key]
        numbers[f"{alias}[{key}]"] = value
        return value

    def column(trials: Any, key: str) -> list[float]:
        if not isinstance(trials, list):
            raise ValueError("column() needs a sweep run")
        return [t.metrics[key] for t in trials]

    def param(trials: Any, key: str) -> list[Any]:
        if not isinstance(trials, list):
            raise ValueError("param() needs a sweep run")
        return [t.values[key] for t in trials]

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return {"True": True, "False": False}.get(node.id, results.get(node.id))
        if isinstance(node, (ast.List, ast.Tuple)):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.Subscript):
            target, key = node.value, ev(node.slice)
            if isinstance(target, ast.Name) and target.id in results:
                return metric(target.id, results[target.id], key)
            return ev(target)[key]
        if isinstance(node, ast.BoolOp):
            values = [bool(ev(v)) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return {ast.Not: lambda v: not v, ast.USub: lambda v: -v, ast.UAdd: lambda v: +v}[type(node.op)](value)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a / b, ast.Pow: lambda: a ** b}
            return ops[type(node.op)]()
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = ev(right_node)
                ok = {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right,
                      ast.GtE: left >= right, ast.Eq: left == right, ast.NotEq: left != right}[type(op)]
                if not ok:
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            name = node.func.id  # type: ignore[attr-defined]
            args = [ev(a) for a in node.args]
            if name == "column":
                values = column(*args)
                numbers[f"{ast.unparse(node.args[0])}[{args[1]}]"] = values
                return values
            if name == "param":
                return param(*args)
            value = FUNCTIONS[name][0](*args)
            if isinstance(value, float):
                numbers[ast.unparse(node)] = value
            return value
        raise ValueError(f"unsupported expression {ast.unparse(node)}")

    try:
        return Outcome(claim, bool(ev(tree)), numbers)
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as error:
        return Outcome(claim, False, numbers, f"{type(error).__name__}: {error}")


def load_claims(folder: str | Path) -> tuple[ClaimsFile, Loaded]:
    """Read and check `<folder>/claims.yaml`: structure, run specs exist, checks parse."""
    path = Path(folder) / CLAIMS_FILE
    if not path.is_file():
        raise SpecError([Problem(None, (), f"{path}: no claims file (a paper folder states its claims in {CLAIMS_FILE})")])
    loaded = load_file(path)
    try:
        claims = ClaimsFile.model_validate(loaded.data)
    except ValidationError as error:
        raise SpecError([
            Problem(loaded.key_mark(tuple(e["loc"])) if e["type"] in ("extra_forbidden", "missing")
                    else loaded.value_mark(tuple(e["loc"])), tuple(e["loc"]), e["msg"])
            for e in error.errors()
        ]) from None
    problems = []
    if claims.paper != path.parent.name:
        problems.append(Problem(loaded.value_mark(("paper",)), ("paper",),
                                f"paper '{claims.paper}' differs from the folder name '{path.parent.name}'"))
    for alias, ref in claims.runs.items():
        if not (path.parent / ref.spec).is_file():
            problems.append(Problem(loaded.value_mark(("runs", alias, "spec")), ("runs", alias, "spec"),
                                    f"spec file not found: {path.parent / ref.spec}"))
    for i, claim in enumerate(claims.claims):
        try:
            parse_check(claim.check, set(claims.runs))
        except ValueError as error:
            problems.append(Problem(loaded.value_mark(("claims", i, "check")), ("claims", i, "check"), str(error)))
    if problems:
        raise SpecError(problems)
    return claims, loaded


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def table(outcomes: list[Outcome]) -> str:
    """Markdown table: claim, numbers, result."""
    lines = ["| claim | numbers | result |", "|---|---|---|"]
    for o in outcomes:
        numbers = ", ".join(f"{k} = {_fmt(v)}" for k, v in o.numbers.items())
        if o.error:
            numbers = f"{numbers}; {o.error}" if numbers else o.error
        lines.append(f"| **{o.claim.name}**: {o.claim.text} | {numbers} | {'pass' if o.passed else 'FAIL'} |")
    return "\n".join(lines)


def rewrite_readme(readme: Path, text: str) -> None:
    """Replace what is between the claims markers (appending a section when there are none)."""
    content = readme.read_text() if readme.is_file() else ""
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in content and END in content:
        head, rest = content.split(BEGIN, 1)
        content = head + block + rest.split(END, 1)[1]
    else:
        content = content.rstrip("\n") + f"\n\n## Claims\n\n{block}\n"
    readme.write_text(content)


def obtain_all(claims: ClaimsFile, folder: Path, fresh: bool, jobs: int, echo: Any = print) -> dict[str, Any]:
    """alias -> RunResult, or a list of trial results (with `.values`) for a sweep spec."""
    from framework.loader import load_spec
    from framework.plan import expand_sweep
    from framework.runner import RunResult, obtain
    from framework.tracking import client
    from framework.sweep import FINISHED, SKIPPED, run_sweep

    results: dict[str, Any] = {}
    for alias, ref in claims.runs.items():
        spec = folder / ref.spec
        if expand_sweep(load_spec(spec, ref.overrides)):
            echo(f"== {alias}: sweep {spec}")
            sweep = run_sweep(spec, ref.overrides, jobs=jobs, echo=echo)
            if sweep.failed:
                raise RuntimeError(f"run '{alias}': {len(sweep.failed)} trial(s) of {spec} did not finish")
            trials = []
            for outcome in sweep.outcomes:
                metrics = outcome.metrics
                if outcome.status == SKIPPED:
                    metrics = dict(client().get_run(outcome.run_id).data.metrics)
                assert outcome.status in (FINISHED, SKIPPED)
                result = RunResult(run_id=outcome.run_id, metrics=metrics)
                result.values = outcome.trial.values  # type: ignore[attr-defined]
                trials.append(result)
            results[alias] = trials
        else:
            echo(f"== {alias}: {spec} {' '.join(ref.overrides)}".rstrip())
            results[alias] = obtain(spec, ref.overrides, fresh=fresh)
    return results


def reproduce(folder: str | Path, fresh: bool = False, write_readme: bool = False, jobs: int = 1,
              echo: Any = print) -> list[Outcome]:
    folder = Path(folder)
    claims, _ = load_claims(folder)
    results = obtain_all(claims, folder, fresh, jobs, echo)
    outcomes = [evaluate(c, results) for c in claims.claims]
    text = table(outcomes)
    echo(text)
    passed = sum(o.passed for o in outcomes)
    echo(f"{passed} of {len(outcomes)} claim(s) hold")
    _log(claims, folder, outcomes, text)
    if write_readme:
        rewrite_readme(folder / "README.md", f"`exp reproduce {folder}`:\n\n{text}")
        echo(f"rewrote the claims table in {folder / 'README.md'}")
    return outcomes


def _log(claims: ClaimsFile, folder: Path, outcomes: list[Outcome], text: str) -> None:
    """One run per reproduction in the paper's experiment: pass/fail metrics and claims.md."""
    from framework.tracking import Tracker

    op = {"name": f"{claims.paper} claims", "paper": claims.paper, "description": "", "tracking": {"uri": None}}
    tracker = Tracker(op, str(folder / CLAIMS_FILE), "", [], extra_tags={"expspec.reproduce": "true"})
    run_id = tracker.start(log_params=False)
    tracker.log_metrics({f"claim/{o.claim.name}": float(o.passed) for o in outcomes})
    tracker.client.log_text(run_id, text + "\n", "claims.md")
    if all(o.passed for o in outcomes):
        tracker.finish()
    else:
        tracker.client.set_tag(run_id, "expspec.error", "claims failed: " + ", ".join(o.claim.name for o in outcomes if not o.passed))
        tracker.client.set_terminated(run_id, "FAILED")
