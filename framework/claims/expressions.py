"""The check language: a small, safe subset of Python expressions, parsed and evaluated here.

Allowed: numbers and strings; `+ - * / **`; comparisons (chained too); `and or not`; lists;
indexing; `alias['metric']` (the run's final metric); calls of the functions in
`framework.claims.functions.FUNCTIONS` and of the sweep accessors in `ACCESSORS`. Nothing
else parses: no attribute access, no keyword arguments, no comprehensions, no imports.

Bounded work: a check has at most `MAX_CHECK_CHARS` characters and nests at most
`MAX_CHECK_DEPTH` levels; `a ** b` is an error when its magnitude passes a 64-bit float's
(about 1.8e308: `10 ** 10 ** 10` is one, found when the check is validated, since both sides are
numbers written in it); `list * n` and `'text' * n` make at most `MAX_SEQUENCE` items.
"""

from __future__ import annotations

import ast
import math
import operator
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from framework.claims.evidence import (
    DEFAULT_LEVEL, FailedRun, Interval, Undecided, best_setting, kleene_and, kleene_not, kleene_or, margin, paired_margin,
    undecided_in,
)
from framework.claims.functions import FUNCTIONS
from framework.claims.outcome import Outcome, Series, Tested
from registry import did_you_mean

if TYPE_CHECKING:
    from framework.claims.schema import Claim

# The language's access to sweep runs (a list of trial results, in trial order); name -> description.
ACCESSORS: dict[str, str] = {
    "column": "column(sweep, 'metric'): the metric of every trial, in trial order",
    "param": "param(sweep, 'key'): the swept value of every trial, in trial order",
    "seed_mean": "seed_mean(sweep, 'metric'): per configuration (trials equal but for `seed`), the mean over its seeds",
    "seed_sd": "seed_sd(sweep, 'metric'): per configuration, the sample standard deviation over its seeds",
    "seed_param": "seed_param(sweep, 'key'): per configuration, the swept value of `key`",
    "best": ("best(sweep, 'key', 'metric', 'max'|'min'): the setting of `key` whose seed-mean metric is best; "
             "at the grid's first or last point a range open beyond it, on a tie the tied span"),
    "margin": ("margin(a, b): the Welch confidence interval of mean(a) - mean(b) over seeds, at the file's "
               "`level` (default 0.95); compared with a number it decides only outside the interval"),
    "paired_margin": "paired_margin(a, b): the paired t confidence interval of mean(a - b), item i paired with item i",
}
STATISTICS = {"margin": margin, "paired_margin": paired_margin}
CALLABLE = (*FUNCTIONS, *ACCESSORS)

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Compare, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq,
    ast.NotEq, ast.Constant, ast.Name, ast.Load, ast.Subscript, ast.Call, ast.List, ast.Tuple,
)
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
MAX_CHECK_CHARS = 2000
MAX_CHECK_DEPTH = 64
MAX_SEQUENCE = 100_000


def _power(base: Any, exponent: Any) -> Any:
    """`base ** exponent`, or a ValueError when its magnitude passes a 64-bit float's."""
    numbers = all(isinstance(v, (int, float)) for v in (base, exponent))
    if numbers and abs(base) > 1:
        try:
            too_large = math.isinf(math.pow(abs(float(base)), float(exponent))) and not math.isinf(base)
        except OverflowError:  # also an int exponent or base too large for a float
            too_large = True
        if too_large:
            raise ValueError(f"{base!r} ** {exponent!r} is too large (more than about 1.8e308)")
    return base ** exponent


def _times(left: Any, right: Any) -> Any:
    """`left * right`, or a ValueError when it would repeat a list or text past MAX_SEQUENCE items."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (list, str)) and isinstance(count, int) and len(sequence) * count > MAX_SEQUENCE:
            raise ValueError(f"repeating a {type(sequence).__name__} of {len(sequence)} {count} times makes more "
                             f"than {MAX_SEQUENCE} items")
    return left * right


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: _times, ast.Div: operator.truediv,
    ast.Pow: _power,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}  # `t < x` is `x > t`


def language() -> str:
    """What `exp explain claims` prints: the claims file's rules, the check language, every
    function a check can call (accessors, builtins, registered claim functions) and what an
    inconclusive result is."""
    import framework.claims.evidence as evidence
    import framework.claims.schema as schema

    functions = [f"  {name}: {FUNCTIONS[name][1]}" for name in FUNCTIONS]
    accessors = [f"  {text}" for text in ACCESSORS.values()]
    return "\n\n".join([
        "claims.yaml (framework/claims/schema.py)\n\n" + (schema.__doc__ or "").strip(),
        "The check language (framework/claims/expressions.py)\n\n" + (__doc__ or "").strip(),
        "Sweep accessors and statistics:\n" + "\n".join(accessors),
        "Functions:\n" + "\n".join(functions),
        "Inconclusive results (framework/claims/evidence.py)\n\n" + (evidence.__doc__ or "").strip(),
    ])


def parse_check(text: str, aliases: set[str]) -> ast.Expression:
    """Parse and vet a check: only the syntax listed in the module docstring, calls of known
    functions by name with positional arguments, and names that are run aliases or functions.
    Raises ValueError naming the first offending part."""
    if len(text) > MAX_CHECK_CHARS:
        raise ValueError(f"a check has at most {MAX_CHECK_CHARS} characters, this one {len(text)}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise ValueError(f"invalid check syntax{where}: {error.msg}") from None
    except (RecursionError, MemoryError):  # Python's parser, on thousands of nested operators
        raise ValueError(f"a check nests at most {MAX_CHECK_DEPTH} levels") from None
    nodes = _nodes(tree)
    if max(depth for _, depth in nodes) > MAX_CHECK_DEPTH:
        raise ValueError(f"a check nests at most {MAX_CHECK_DEPTH} levels (operators, calls, brackets)")
    for node, _ in nodes:
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"'{ast.unparse(node)}' is not allowed in a check ({type(node).__name__})")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in CALLABLE or node.keywords:
                raise ValueError(f"unknown function call '{ast.unparse(node)}'. Functions: {', '.join(CALLABLE)}")
        elif isinstance(node, ast.Name) and node.id not in aliases and node.id not in CALLABLE:
            hint = did_you_mean(node.id, sorted(aliases), otherwise=f" Runs: {', '.join(sorted(aliases))}.")
            raise ValueError(f"unknown run '{node.id}'.{hint}")
    for node, _ in nodes:  # a power of numbers written in the check: its size is known now
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Mult)) and _constant(node):
            try:
                _Evaluator({}).value(node)
            except ValueError as error:
                raise ValueError(f"'{ast.unparse(node)}': {error}") from None
            except (TypeError, ZeroDivisionError):
                pass  # the check's own error, reported when it is evaluated
    return tree


def _nodes(tree: ast.AST) -> list[tuple[ast.AST, int]]:
    """Every node of `tree` with its depth (the root 1), breadth first as `ast.walk` lists them:
    one iterative pass, so a deep tree is measured without recursion."""
    found = [(tree, 1)]
    for node, depth in found:  # the list grows while it is read
        found.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return found


def _constant(node: ast.AST) -> bool:
    """Whether `node` reads nothing but numbers and strings written in the check."""
    return not any(isinstance(n, (ast.Name, ast.Call, ast.Subscript)) for n in ast.walk(node))


def used_aliases(tree: ast.Expression, aliases: set[str]) -> set[str]:
    """The run aliases a parsed check reads."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in aliases}


@dataclass
class Numbers:
    """Made-up results of a control (`control.numbers`): what a run or a trial offers a check."""

    metrics: dict[str, Any]
    values: dict[str, Any] = field(default_factory=dict)


def _stages_swapped(result: Any, stages: dict[str, str]) -> Any:
    """A run's (or each trial's) metrics with stage `s`'s read from stage `stages[s]`: metric
    'other:split/name' also as 's:split/name' (a missing one stays missing: the check says so)."""
    if isinstance(result, list):
        return [_stages_swapped(trial, stages) for trial in result]
    metrics = dict(result.metrics)
    for stage, other in stages.items():
        for key in [k for k in metrics if k.startswith(f"{stage}:")]:
            del metrics[key]
        metrics.update({f"{stage}:{k.split(':', 1)[1]}": v for k, v in result.metrics.items()
                        if k.startswith(f"{other}:")})
    return Numbers(metrics, dict(getattr(result, "values", {}) or {}))


def control_results(claim: Claim, results: dict[str, Any]) -> dict[str, Any]:
    """The results with the control applied: aliases swapped (`replace`), stages of every run
    swapped (`stages`), or made-up (`numbers`; a list for a sweep, each item a metric mapping with
    an optional `values` mapping)."""
    swapped = dict(results)
    for alias, other in claim.control.replace.items():
        swapped[alias] = results[other]
    if claim.control.stages:
        swapped = {alias: _stages_swapped(result, claim.control.stages) if result is not None else None
                   for alias, result in swapped.items()}
    for alias, given in claim.control.numbers.items():
        def one(item: dict[str, Any]) -> Numbers:
            metrics = {k: v for k, v in item.items() if k != "values"}
            return Numbers(metrics, dict(item.get("values") or {}))

        swapped[alias] = [one(item) for item in given] if isinstance(given, list) else one(given)
    return swapped


def _check(text: str, results: dict[str, Any], level: float) -> tuple[Any, _Evaluator, str]:
    """The check's value (True, False or Undecided), the evaluator (with what it read), and its
    error (a check that raises is False, with the error). A check that reads a run that did not
    finish is Undecided (whatever else it reads), and reads nothing."""
    tree = parse_check(text, set(results))
    evaluator = _Evaluator(results, level)
    failed = [results[a] for a in sorted(used_aliases(tree, set(results))) if isinstance(results[a], FailedRun)]
    if failed:
        return Undecided(*(r for f in failed for r in f.undecided().reasons)), evaluator, ""
    try:
        value = evaluator.value(tree)
        return (value if isinstance(value, Undecided) else bool(value)), evaluator, ""
    except (ValueError, KeyError, TypeError, ArithmeticError, IndexError) as error:  # OverflowError: 1e308 * 10
        return False, evaluator, f"{type(error).__name__}: {error}"


def _reasons(value: Any) -> str:
    return "; ".join(value.reasons) if isinstance(value, Undecided) else ""


def evaluate(claim: Claim, results: dict[str, Any], level: float = DEFAULT_LEVEL) -> Outcome:
    """Evaluate one claim, its floor and its negative control against obtained results: alias ->
    a run result (with `.metrics`), or a list of trial results (with `.metrics` and `.values`) for
    a sweep. `level`: the confidence level of `margin`/`paired_margin`. A check that raises (a
    missing metric, a sweep used as a run, a division by zero) is false, with the error; one whose
    value the results cannot decide makes the claim inconclusive (framework.claims.evidence). A
    check that does not parse, or names a run missing from `results`, raises ValueError."""
    value, read, error = _check(claim.check, results, level)
    numbers, series, tested = read.numbers, dict(read.series), list(read.tested)
    undecided = [_reasons(value)]
    floor_passed = None
    if claim.floor is not None:
        floor_value, floor_read, floor_error = _check(claim.floor.check, results, level)
        numbers.update({f"floor: {k}": v for k, v in floor_read.numbers.items()})
        series.update({f"floor: {k}": v for k, v in floor_read.series.items() if k not in series})
        tested += [Tested(f"floor: {t.quantity}", t.value, t.op, t.threshold, t.holds, t.threshold_text)
                   for t in floor_read.tested]
        error = "; ".join(e for e in (error, floor_error and f"floor: {floor_error}") if e)
        floor_passed = None if isinstance(floor_value, Undecided) else floor_value
        undecided.append(_reasons(floor_value) and f"floor ({claim.floor.text}): {_reasons(floor_value)}")
    control_value, _, control_error = _check(claim.check, control_results(claim, results), level)
    holds = value is True and (claim.floor is None or floor_passed is True)
    reads = used_aliases(parse_check(claim.check, set(results)), set(results))
    if claim.floor is not None:
        reads |= used_aliases(parse_check(claim.floor.check, set(results)), set(results))
    return Outcome(claim, holds, numbers, error, control_passed=control_value is True,
                   control_error=control_error, undecided="; ".join(u for u in undecided if u),
                   floor_passed=floor_passed, control_undecided=_reasons(control_value),
                   refuted=value is False, failed_runs=sorted(a for a in reads if isinstance(results[a], FailedRun)),
                   read=series, tested=tested)


class _Evaluator:
    """Evaluates a vetted check, recording in `numbers` each value it read: `alias[metric]`, a
    sweep's column, and every float a function returned; in `series` each metric it read, per
    trial with the trial's swept values; in `tested` each comparison of a number with a number."""

    def __init__(self, results: dict[str, Any], level: float = DEFAULT_LEVEL) -> None:
        self.results = results
        self.level = level
        self.numbers: dict[str, Any] = {}
        self.series: dict[str, Series] = {}
        self.tested: list[Tested] = []

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return self.value(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.results.get(node.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BoolOp):
            # every operand is evaluated (no short-circuit), so the table shows each number a claim rests on
            values = [self.value(v) for v in node.values]
            return kleene_and(values) if isinstance(node.op, ast.And) else kleene_or(values)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            return kleene_not(operand) if isinstance(node.op, ast.Not) else _UNARY[type(node.op)](operand)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self.value(node.left), self.value(node.right))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ValueError(f"unsupported expression {ast.unparse(node)}")

    def _subscript(self, node: ast.Subscript) -> Any:
        target, key = node.value, self.value(node.slice)
        if isinstance(target, ast.Name) and target.id in self.results:
            return self.metric(target.id, key)
        return self.value(target)[key]

    def _compare(self, node: ast.Compare) -> Any:
        """True, False, or Undecided (a comparison with a range the results leave open); a
        chain is the three-valued `and` of its links, each evaluated."""
        left_node, left, links = node.left, self.value(node.left), []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node)
            links.append(_COMPARE[type(op)](left, right))
            self._record_test(left_node, left, _SYMBOL[type(op)], right_node, right, links[-1])
            left_node, left = right_node, right
        return kleene_and(links)

    def _record_test(self, left_node: ast.AST, left: Any, op: str, right_node: ast.AST, right: Any, holds: Any) -> None:
        """Record a comparison link of a computed number or Interval with a number in `tested`, as
        `quantity op threshold`: a number written in the check is the threshold (on either side);
        else the right side's value, named by its text."""
        if _constant(left_node) and not _constant(right_node):
            left_node, left, op, right_node, right = right_node, right, _MIRRORED[op], left_node, left
        quantity = isinstance(left, Interval) or (isinstance(left, (int, float)) and not isinstance(left, bool))
        threshold = isinstance(right, (int, float)) and not isinstance(right, bool)
        if quantity and threshold and not _constant(left_node):
            decided = holds if isinstance(holds, bool) else None
            text = "" if _constant(right_node) else ast.unparse(right_node)
            self.tested.append(Tested(ast.unparse(left_node), left, op, float(right), decided, text))

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]  # parse_check admits only calls by name
        args = [self.value(a) for a in node.args]
        self._record_series(name, node, args)
        if name == "column":
            values = self.column(*args)
            self.numbers[f"{ast.unparse(node.args[0])}[{args[1]}]"] = values
            return values
        if name == "param":
            return self.param(*args)
        if name.startswith("seed_"):
            return self._per_configuration(name, node, *args)
        pending = undecided_in(args)
        if name == "best":
            value = self._best(*args)
        elif name == "abs" and len(args) == 1 and isinstance(args[0], Interval):
            value = abs(args[0])
        elif pending is not None:  # a function of a range is not a number
            value = pending
        elif name in STATISTICS:
            value = STATISTICS[name](*args, self.level)
        else:
            value = FUNCTIONS[name][0](*args)
        if isinstance(value, (float, Interval, Undecided)):
            self.numbers[ast.unparse(node)] = value
        return value

    def _record_series(self, name: str, node: ast.Call, args: list[Any]) -> None:
        """column / seed_mean / seed_sd / best of a sweep: record each trial's swept values and
        metric in `series`, as `alias[metric]` (trials without the metric are left out: the check
        says so)."""
        where = {"column": 1, "seed_mean": 1, "seed_sd": 1, "best": 2}.get(name)
        if where is None or len(args) <= where or not isinstance(args[0], list) or not isinstance(args[where], str):
            return
        key = args[where]
        self.series.setdefault(f"{ast.unparse(node.args[0])}[{key}]", [
            (dict(getattr(t, "values", {}) or {}), t.metrics[key]) for t in args[0] if key in t.metrics])

    def _best(self, trials: Any, key: str, metric: str, which: str) -> Any:
        """best(sweep, 'key', 'metric', 'max' | 'min'): the setting of `key` whose seed-mean
        metric is largest (smallest): a number, or a range at the grid's edge or on a tie."""
        if which not in ("max", "min"):
            raise ValueError(f"best() takes 'max' or 'min' as its last argument, got {which!r}")
        return best_setting(self._per_configuration("seed_mean", None, trials, metric),
                            self._per_configuration("seed_param", None, trials, key), which == "max")

    def metric(self, alias: str, key: str) -> float:
        """The final value of metric `key` of the run `alias` (not a sweep)."""
        result = self.results[alias]
        if isinstance(result, list):
            raise ValueError(f"'{alias}' is a sweep: use column({alias}, '{key}')")
        if key not in result.metrics:
            hint = did_you_mean(key, sorted(result.metrics))
            raise ValueError(f"run '{alias}' has no metric '{key}'.{hint}")
        value = result.metrics[key]
        self.numbers[f"{alias}[{key}]"] = value
        self.series.setdefault(f"{alias}[{key}]", [({}, value)])
        return value

    @staticmethod
    def column(trials: Any, key: str) -> list[float]:
        if not isinstance(trials, list):
            raise ValueError("column() needs a sweep run")
        return [_trial_metric(t, key) for t in trials]

    def _per_configuration(self, name: str, node: ast.Call | None, trials: Any, key: str) -> list[Any]:
        """seed_mean / seed_sd / seed_param: trials grouped by their values other than `seed`,
        in trial order. seed_mean records "mean ± sd (n seeds)" per configuration for the table."""
        if not isinstance(trials, list):
            raise ValueError(f"{name}() needs a sweep run")
        groups: dict[str, list[Any]] = {}
        for trial in trials:
            config = {k: v for k, v in trial.values.items() if k != "seed"}
            groups.setdefault(repr(sorted(config.items())), []).append(trial)
        if name == "seed_param":
            return [group[0].values[key] for group in groups.values()]
        columns = [[_trial_metric(t, key) for t in group] for group in groups.values()]
        means = [statistics.fmean(c) for c in columns]
        sds = [statistics.stdev(c) if len(c) > 1 else 0.0 for c in columns]
        if node is not None:  # None: called by best(), whose answer the table records instead
            label = f"{ast.unparse(node.args[0])}[{key}] over seeds"
            self.numbers[label] = [f"{m:.4g} ± {s:.2g} (n={len(c)})" for m, s, c in zip(means, sds, columns)]
        return means if name == "seed_mean" else sds

    @staticmethod
    def param(trials: Any, key: str) -> list[Any]:
        if not isinstance(trials, list):
            raise ValueError("param() needs a sweep run")
        return [t.values[key] for t in trials]


def _trial_metric(trial: Any, key: str) -> Any:
    """A trial's metric, or a ValueError naming the trial and the closest metric it has."""
    if key not in trial.metrics:
        where = ",".join(f"{k}={v}" for k, v in trial.values.items()) or "a trial"
        raise ValueError(f"trial {where} has no metric '{key}'.{did_you_mean(key, sorted(trial.metrics))}")
    return trial.metrics[key]
