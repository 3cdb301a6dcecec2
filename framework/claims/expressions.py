"""The check language: a small, safe subset of Python expressions, parsed and evaluated here.

Allowed: numbers and strings; `+ - * / **`; comparisons (chained too); `and or not`; lists;
indexing; `alias['metric']` (the run's final metric); calls of the functions in
`framework.claims.functions.FUNCTIONS` and of the two sweep accessors in `ACCESSORS`. Nothing
else parses: no attribute access, no keyword arguments, no comprehensions, no imports.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from framework.claims.functions import FUNCTIONS
from registry import did_you_mean

if TYPE_CHECKING:
    from framework.claims.schema import Claim

# The language's access to sweep runs (a list of trial results, in trial order); name -> description.
ACCESSORS: dict[str, str] = {
    "column": "column(sweep, 'metric'): the metric of every trial, in trial order",
    "param": "param(sweep, 'key'): the swept value of every trial, in trial order",
}
CALLABLE = (*FUNCTIONS, *ACCESSORS)

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Compare, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq,
    ast.NotEq, ast.Constant, ast.Name, ast.Load, ast.Subscript, ast.Call, ast.List, ast.Tuple,
)
_UNARY: dict[type, Callable[[Any], Any]] = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


def parse_check(text: str, aliases: set[str]) -> ast.Expression:
    """Parse and vet a check: only the syntax listed in the module docstring, calls of known
    functions by name with positional arguments, and names that are run aliases or functions.
    Raises ValueError naming the first offending part."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        where = f" at column {error.offset}" if error.offset else ""
        raise ValueError(f"invalid check syntax{where}: {error.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"'{ast.unparse(node)}' is not allowed in a check ({type(node).__name__})")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in CALLABLE or node.keywords:
                raise ValueError(f"unknown function call '{ast.unparse(node)}'. Functions: {', '.join(CALLABLE)}")
        elif isinstance(node, ast.Name) and node.id not in aliases and node.id not in CALLABLE:
            hint = did_you_mean(node.id, sorted(aliases), otherwise=f" Runs: {', '.join(sorted(aliases))}.")
            raise ValueError(f"unknown run '{node.id}'.{hint}")
    return tree


def used_aliases(tree: ast.Expression, aliases: set[str]) -> set[str]:
    """The run aliases a parsed check reads."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id in aliases}


@dataclass
class Outcome:
    """A claim's result. `numbers` are the values the check read (for the table); `ran` is False
    for a claim that was not evaluated (a full-tier claim without `--full`): neither passed nor failed."""

    claim: Claim
    passed: bool
    numbers: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    ran: bool = True

    @property
    def failed(self) -> bool:
        return self.ran and not self.passed


def evaluate(claim: Claim, results: dict[str, Any]) -> Outcome:
    """Evaluate one claim against obtained results: alias -> a run result (with `.metrics`), or a
    list of trial results (with `.metrics` and `.values`) for a sweep. A check that raises (a
    missing metric, a sweep used as a run, a division by zero) is a failed claim with the error;
    a check that does not parse, or names a run missing from `results`, raises ValueError."""
    tree = parse_check(claim.check, set(results))
    evaluator = _Evaluator(results)
    try:
        passed = bool(evaluator.value(tree))
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as error:
        return Outcome(claim, False, evaluator.numbers, f"{type(error).__name__}: {error}")
    return Outcome(claim, passed, evaluator.numbers)


class _Evaluator:
    """Evaluates a vetted check, recording in `numbers` each value it read: `alias[metric]`, a
    sweep's column, and every float a function returned."""

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results
        self.numbers: dict[str, Any] = {}

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
            values = [bool(self.value(v)) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self.value(node.operand))
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

    def _compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]  # parse_check admits only calls by name
        args = [self.value(a) for a in node.args]
        if name == "column":
            values = self.column(*args)
            self.numbers[f"{ast.unparse(node.args[0])}[{args[1]}]"] = values
            return values
        if name == "param":
            return self.param(*args)
        value = FUNCTIONS[name][0](*args)
        if isinstance(value, float):
            self.numbers[ast.unparse(node)] = value
        return value

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
        return value

    @staticmethod
    def column(trials: Any, key: str) -> list[float]:
        if not isinstance(trials, list):
            raise ValueError("column() needs a sweep run")
        return [t.metrics[key] for t in trials]

    @staticmethod
    def param(trials: Any, key: str) -> list[Any]:
        if not isinstance(trials, list):
            raise ValueError("param() needs a sweep run")
        return [t.values[key] for t in trials]
