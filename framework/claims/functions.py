"""The functions a claim's check can call, as one table: name -> (callable, one-line description).

Each is a plain function of numbers and lists of numbers (what `alias['metric']`, `column(...)`
and `param(...)` give), so the table can become a registered kind without changing a check.
The language's own accessors of sweep runs, `column` and `param`, live in
`framework.claims.expressions`, since they read the obtained runs rather than numbers.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable


def mean(xs: list[float]) -> float:
    """Arithmetic mean of a non-empty list."""
    return statistics.fmean(xs)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs; two equal-length lists of at least 2 values."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"slope needs two equal-length lists of >= 2 values, got {len(xs)} and {len(ys)}")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log ys against log xs (all values > 0): a power law's exponent."""
    return slope([math.log(x) for x in xs], [math.log(y) for y in ys])


def r2(xs: list[float], ys: list[float]) -> float:
    """R^2 of the least-squares line through (xs, ys); 1.0 when ys are all equal."""
    b = slope(xs, ys)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    residual = sum((y - (my + b * (x - mx))) ** 2 for x, y in zip(xs, ys))
    total = sum((y - my) ** 2 for y in ys)
    return 1.0 - residual / total if total else 1.0


def non_increasing(xs: list[float], slack: float = 0.0) -> bool:
    """Every value is <= the previous one + slack."""
    return all(b <= a + slack for a, b in zip(xs, xs[1:]))


def non_decreasing(xs: list[float], slack: float = 0.0) -> bool:
    """Every value is >= the previous one - slack."""
    return all(b >= a - slack for a, b in zip(xs, xs[1:]))


def data_constrained_r2(unique: list[float], total: float | list[float], values: list[float]) -> float:
    """R^2 of FVU = E + A (D'(U,T;R*)/T)^-alpha fitted over unique-data sizes `unique` at budget
    `total` (one number, or one per point); the fit is components.fit.data_constrained's."""
    from components.fit.data_constrained import data_constrained_r2 as fit_r2

    return fit_r2(unique, total, values)


# name -> (function, one-line description); with column and param, the only callables a check can use.
FUNCTIONS: dict[str, tuple[Callable[..., Any], str]] = {
    "abs": (abs, "absolute value"),
    "min": (min, "smallest of a list or of the arguments"),
    "max": (max, "largest of a list or of the arguments"),
    "mean": (mean, "mean of a list"),
    "log": (math.log, "natural logarithm"),
    "sqrt": (math.sqrt, "square root"),
    "len": (len, "length of a list"),
    "slope": (slope, "least-squares slope of ys against xs"),
    "loglog_slope": (loglog_slope, "least-squares slope of log ys against log xs"),
    "r2": (r2, "R^2 of the least-squares line"),
    "non_increasing": (non_increasing, "each value <= the previous + slack"),
    "non_decreasing": (non_decreasing, "each value >= the previous - slack"),
    "data_constrained_r2": (data_constrained_r2, "R^2 of FVU = E + A (D'(U,T;R*)/T)^-alpha (Muennighoff's "
                            "effective data) fitted over unique-data sizes U at budget T"),
}
