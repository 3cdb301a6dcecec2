"""What the results can decide: a check is true, false, or `Undecided` (the claim is inconclusive).

Two kinds of value carry what the runs cannot pin down:

- `Interval(low, high)`: a number known only to lie in [low, high]. `margin(a, b)` (Welch) and
  `paired_margin(a, b)` (paired t) give the confidence interval of mean(a) - mean(b) over seeds,
  at the claims file's `level` (default 0.95), so a margin within the seeds' noise does not
  decide a comparison. `argmax_param` / `argmin_param` (and `best`) give the best setting of a
  swept grid; when it falls on the grid's first or last point the true optimum may lie beyond
  it, so it is an Interval open on that side (`>= 0.1`), and exact ties give the span of the tied
  settings.
- `Undecided(reason)`: a truth value (or number) the results cannot decide.

A comparison with an Interval is true when the whole interval is on the true side, false when it
is wholly on the false side, and Undecided otherwise. Arithmetic on Intervals is interval
arithmetic; any other function of one is Undecided. `and`/`or`/`not` follow three-valued (Kleene)
logic: `False and Undecided` is False, `True and Undecided` is Undecided. A check whose value is
Undecided makes the claim `inconclusive`, with the reasons (framework.claims.expressions).

Statistics come from scipy.stats (imported when a check first asks for a margin).
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Sequence
from typing import Any, Callable

DEFAULT_LEVEL = 0.95


class Undecided:
    """A value the results cannot decide, with the reason(s) why."""

    def __init__(self, *reasons: str) -> None:
        self.reasons = tuple(dict.fromkeys(r for r in reasons if r))

    def __repr__(self) -> str:
        return f"undecided ({'; '.join(self.reasons)})"

    def __bool__(self) -> bool:
        raise TypeError("an undecided value is neither true nor false")

    def _same(self, *_: Any) -> Undecided:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _same  # type: ignore[assignment]
    __hash__ = object.__hash__

    def __neg__(self) -> Undecided:
        return self

    def __pos__(self) -> Undecided:
        return self


class FailedRun:
    """A run (or sweep) of the claims that did not finish: what a check reads of it is Undecided."""

    def __init__(self, alias: str, reason: str) -> None:
        self.alias, self.reason = alias, reason

    def undecided(self) -> Undecided:
        return Undecided(f"run '{self.alias}' did not finish ({self.reason})")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class Interval:
    """A number known only to lie in [low, high] (either end may be infinite). `what` says where it
    comes from (shown in the table and in an inconclusive claim's reason)."""

    def __init__(self, low: float, high: float, what: str = "") -> None:
        if math.isnan(low) or math.isnan(high) or low > high:
            raise ValueError(f"not an interval: [{low}, {high}]")
        self.low, self.high, self.what = float(low), float(high), what

    def __repr__(self) -> str:
        if self.low == -math.inf:
            text = f"<= {self.high:.4g}"
        elif self.high == math.inf:
            text = f">= {self.low:.4g}"
        else:
            text = f"[{self.low:.4g}, {self.high:.4g}]"
        return f"{text} ({self.what})" if self.what else text

    def __bool__(self) -> bool:
        raise TypeError(f"a range of values ({self!r}) is neither true nor false: compare it with a number")

    # comparisons: decided only when the whole interval lies on one side
    def _compare(self, other: Any, op: Callable[[Any, Any], bool], name: str) -> bool | Undecided:
        if isinstance(other, Undecided):
            return other
        o_low, o_high = (other.low, other.high) if isinstance(other, Interval) else (other, other)
        if not _number(o_low):
            raise TypeError(f"cannot compare a range of values with {other!r}")
        corners = {op(a, b) for a in (self.low, self.high) for b in (o_low, o_high)}
        if name in ("==", "!="):  # equal only when both are the same single point
            inside = self.low <= o_high and o_low <= self.high
            point = self.low == self.high == o_low == o_high
            equal: bool | None = True if point else (False if not inside else None)
            if equal is None:
                return Undecided(f"{self!r} may or may not be {_show(other)}")
            return equal if name == "==" else not equal
        if len(corners) == 1:
            return corners.pop()
        return Undecided(f"{self!r} straddles {_show(other)}")

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt, "<")

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le, "<=")

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt, ">")

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge, ">=")

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, operator.eq, "==")

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return self._compare(other, operator.ne, "!=")

    __hash__ = object.__hash__

    # interval arithmetic
    def _arith(self, other: Any, op: Callable[[float, float], float], reflected: bool = False) -> Any:
        if isinstance(other, Undecided):
            return other
        if not isinstance(other, Interval):
            if not _number(other):
                raise TypeError(f"cannot combine a range of values with {other!r}")
            other = Interval(other, other)
        a, b = (other, self) if reflected else (self, other)
        if op is operator.truediv and b.low <= 0 <= b.high:
            return Undecided(f"division by a range that contains 0: {b!r}")
        with_inf = []
        for x in (a.low, a.high):
            for y in (b.low, b.high):
                try:
                    v = op(x, y)
                except (OverflowError, ZeroDivisionError):
                    return Undecided(f"{a!r} and {b!r} overflow")
                if isinstance(v, float) and math.isnan(v):
                    return Undecided(f"{a!r} and {b!r} give no number")
                with_inf.append(v)
        what = "; ".join(dict.fromkeys(x.what for x in (a, b) if x.what))
        return Interval(min(with_inf), max(with_inf), what)

    def __add__(self, other: Any) -> Any:
        return self._arith(other, operator.add)

    def __radd__(self, other: Any) -> Any:
        return self._arith(other, operator.add, reflected=True)

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub)

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub, reflected=True)

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul)

    def __rmul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul, reflected=True)

    def __truediv__(self, other: Any) -> Any:
        return self._arith(other, operator.truediv)

    def __rtruediv__(self, other: Any) -> Any:
        return self._arith(other, operator.truediv, reflected=True)

    def __neg__(self) -> Interval:
        return Interval(-self.high, -self.low, self.what)

    def __abs__(self) -> Interval:
        ends = sorted((abs(self.low), abs(self.high)))
        return Interval(0.0 if self.low <= 0 <= self.high else ends[0], ends[1], self.what)

    def __pos__(self) -> Interval:
        return self


def bounds(value: Any) -> tuple[float, float]:
    """(low, high) of an Interval, (x, x) of a number."""
    return (value.low, value.high) if isinstance(value, Interval) else (float(value), float(value))


def _show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


def undecided_in(args: Sequence[Any]) -> Undecided | None:
    """An Undecided standing for a function's arguments when one of them (or an item of a list
    argument) is an Interval or Undecided: a function of a range is not a number."""
    reasons = []
    for arg in args:
        for item in arg if isinstance(arg, list) else [arg]:
            if isinstance(item, Undecided):
                reasons.extend(item.reasons)
            elif isinstance(item, Interval):
                reasons.append(f"a function of the range {item!r}")
    return Undecided(*reasons) if reasons else None


def kleene_and(values: list[Any]) -> bool | Undecided:
    """Three-valued `and`: False if any operand is false, else Undecided if any is, else True."""
    undecided = [v for v in values if isinstance(v, Undecided)]
    if any(v is False or (not isinstance(v, Undecided) and not bool(v)) for v in values):
        return False
    return Undecided(*(r for u in undecided for r in u.reasons)) if undecided else True


def kleene_or(values: list[Any]) -> bool | Undecided:
    """Three-valued `or`: True if any operand is true, else Undecided if any is, else False."""
    undecided = [v for v in values if isinstance(v, Undecided)]
    if any(not isinstance(v, Undecided) and bool(v) for v in values):
        return True
    return Undecided(*(r for u in undecided for r in u.reasons)) if undecided else False


def kleene_not(value: Any) -> bool | Undecided:
    return value if isinstance(value, Undecided) else not value


def _values(name: str, xs: Any) -> list[float]:
    if not isinstance(xs, list) or not all(_number(x) for x in xs):
        raise ValueError(f"{name} needs lists of numbers (one per seed, e.g. column(sweep, 'metric')), got {xs!r}")
    return [float(x) for x in xs]


def margin(a: list[float], b: list[float], level: float = DEFAULT_LEVEL) -> Interval | Undecided:
    """Welch's confidence interval (scipy.stats.ttest_ind, unequal variances) of mean(a) - mean(b):
    arms measured on independent seeds. Fewer than 2 values in an arm is Undecided."""
    a, b = _values("margin", a), _values("margin", b)
    if len(a) < 2 or len(b) < 2:
        return Undecided(f"margin needs >= 2 seeds per arm, got {len(a)} and {len(b)}")
    difference = statistics.fmean(a) - statistics.fmean(b)
    what = f"{difference:.4g}, Welch {level:.0%} over n={len(a)}, {len(b)}"
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:
        return Interval(difference, difference, what)  # no spread at all: deterministic arms
    from scipy import stats

    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(level)
    return Interval(float(ci.low), float(ci.high), what)


def paired_margin(a: list[float], b: list[float], level: float = DEFAULT_LEVEL) -> Interval | Undecided:
    """The paired t confidence interval (scipy.stats.ttest_rel) of mean(a - b): arms run on the
    same seeds (same data, same init), item i of `a` paired with item i of `b`."""
    a, b = _values("paired_margin", a), _values("paired_margin", b)
    if len(a) != len(b):
        raise ValueError(f"paired_margin pairs seeds: got {len(a)} and {len(b)} values")
    if len(a) < 2:
        return Undecided(f"paired_margin needs >= 2 seeds, got {len(a)}")
    differences = [x - y for x, y in zip(a, b)]
    difference = statistics.fmean(differences)
    what = f"{difference:.4g}, paired t {level:.0%} over n={len(a)}"
    if statistics.pvariance(differences) == 0:
        return Interval(difference, difference, what)
    from scipy import stats

    ci = stats.ttest_rel(a, b).confidence_interval(level)
    return Interval(float(ci.low), float(ci.high), what)


def best_setting(values: list[float], params: list[Any], largest: bool) -> Any:
    """The setting of the best value (largest or smallest) over a swept grid. A number, or an
    Interval: open beyond the grid's end when the best is its first or last setting (the optimum
    may lie outside what was swept), the span of the settings when several tie (equal to float
    rounding: `math.isclose` at rel_tol 1e-9, so 0.9259 computed two ways is a tie). Settings that
    are not numbers: the setting, or Undecided on a tie."""
    if len(values) != len(params) or not values:
        raise ValueError(f"needs two equal-length, non-empty lists, got {len(values)} values and {len(params)} params")
    top = max(values) if largest else min(values)
    best = [p for v, p in zip(values, params) if math.isclose(v, top, rel_tol=1e-9, abs_tol=1e-12)]
    which = "largest" if largest else "smallest"
    if not all(_number(p) for p in params):
        if len(best) > 1:
            return Undecided(f"the {which} value {top:.4g} ties at {best}")
        return best[0]
    grid = sorted({float(p) for p in params})
    low, high = min(best), max(best)
    what = []
    if len(best) > 1:
        what.append(f"a tie of {top:.4g} at {sorted(best)}")
    if len(grid) > 1 and low == grid[0]:
        low = -math.inf
        what.append(f"best at the grid's first point {grid[0]:.4g}")
    if len(grid) > 1 and high == grid[-1]:
        high = math.inf
        what.append(f"best at the grid's last point {grid[-1]:.4g}")
    if not what:
        return best[0]
    return Interval(low, high, "; ".join(what))
