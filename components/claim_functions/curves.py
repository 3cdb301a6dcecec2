"""Shapes of curves over a sweep: slopes, fit quality and monotonicity, for claims.yaml checks.

Plain Python over lists of floats (a sweep's `column(...)` / `param(...)`), so evaluating claims
never imports torch.
"""

from __future__ import annotations

import math
import statistics


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"slope needs two equal-length lists of >= 2 values, got {len(xs)} and {len(ys)}")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("slope needs at least two different xs")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log ys against log xs (a power law's exponent)."""
    return slope([math.log(x) for x in xs], [math.log(y) for y in ys])


def r2(xs: list[float], ys: list[float]) -> float:
    """R^2 of the least-squares line through (xs, ys)."""
    b = slope(xs, ys)
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    residual = sum((y - (my + b * (x - mx))) ** 2 for x, y in zip(xs, ys))
    total = sum((y - my) ** 2 for y in ys)
    return 1.0 - residual / total if total else 1.0


def non_increasing(xs: list[float], slack: float = 0.0) -> bool:
    """Each value <= the previous + slack."""
    return all(b <= a + slack for a, b in zip(xs, xs[1:]))


def non_decreasing(xs: list[float], slack: float = 0.0) -> bool:
    """Each value >= the previous - slack."""
    return all(b >= a - slack for a, b in zip(xs, xs[1:]))


def interpolate(x: float | list[float], x0: float | list[float], y0: float | list[float], x1: float | list[float],
                y1: float | list[float]) -> float | list[float]:
    """The value at x on the line through (x0, y0) and (x1, y1); elementwise when given lists of
    equal length (one per seed: e.g. a baseline's metric read at each seed's accuracy of the method,
    between two baseline settings that bracket it)."""
    args = (x, x0, y0, x1, y1)
    lengths = {len(a) for a in args if isinstance(a, list)}
    if not lengths:
        if x1 == x0:
            raise ValueError(f"interpolate needs x0 != x1, got {x0} twice")
        return y0 + (x - x0) * (y1 - y0) / (x1 - x0)
    if len(lengths) > 1 or 0 in lengths:
        raise ValueError(f"interpolate needs lists of one non-empty length, got lengths {sorted(lengths)}")
    n = lengths.pop()
    at = [[a[i] if isinstance(a, list) else a for a in args] for i in range(n)]
    return [interpolate(*values) for values in at]
