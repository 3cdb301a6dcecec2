"""Data-constrained scaling law for a fixed training budget spent on a finite pool of unique data.

Muennighoff et al. 2023 ("Scaling Data-Constrained Language Models") value repeated data by an
effective amount D' = U + U R* (1 - exp(-R / R*)) for U unique samples seen 1 + R times (R = T/U - 1
repetitions within a budget of T samples): repeats are worth almost as much as fresh data while
R << R*, and worthless beyond a few R*. `sae_replay` fits this "diversity--repetition tradeoff"
to SAE quality against the buffer size U at fixed T:

    FVU(U) = E + A * (D'(U, T; R*) / T) ** -alpha

(D' is divided by T only to keep the numbers O(1); that rescales A). Below U ~ T / R* quality is
limited by diversity; above it, replaying the buffer is as good as fresh data (D' ~ T).

Pure Python (no numpy), so claim checks can call it: `fit_data_constrained_law` searches alpha and
R* on a grid (then a finer one around the best point) and solves E, A >= 0 by least squares in
closed form at each grid point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def effective_samples(unique: float, total: float, r_star: float) -> float:
    """Muennighoff's D' for `unique` samples within a budget of `total` (>= unique) samples."""
    if not 0 < unique <= total:
        raise ValueError(f"unique must be in (0, total = {total}], got {unique}")
    if r_star <= 0:
        raise ValueError(f"r_star must be > 0, got {r_star}")
    repeats = total / unique - 1.0
    return unique + unique * r_star * (1.0 - math.exp(-repeats / r_star))


def _best_linear(features: list[float], ys: list[float]) -> tuple[float, float, float]:
    """(E, A, SSE) of ys ~ E + A * features with E, A >= 0."""
    n = len(ys)
    candidates = []
    mf, my = sum(features) / n, sum(ys) / n
    sff = sum((f - mf) ** 2 for f in features)
    if sff > 0:
        a = sum((f - mf) * (y - my) for f, y in zip(features, ys)) / sff
        e = my - a * mf
        if a >= 0 and e >= 0:
            candidates.append((e, a))
    sq = sum(f * f for f in features)
    if sq > 0:
        candidates.append((0.0, max(0.0, sum(f * y for f, y in zip(features, ys)) / sq)))
    candidates.append((max(0.0, my), 0.0))
    best = None
    for e, a in candidates:
        sse = sum((y - e - a * f) ** 2 for f, y in zip(features, ys))
        if best is None or sse < best[2]:
            best = (e, a, sse)
    assert best is not None
    return best


def _grid(low: float, high: float, count: int, log: bool) -> list[float]:
    if log:
        return [math.exp(math.log(low) + (math.log(high) - math.log(low)) * i / (count - 1)) for i in range(count)]
    return [low + (high - low) * i / (count - 1) for i in range(count)]


def fit_data_constrained_law(unique: Sequence[float], total: float | Sequence[float], values: Sequence[float],
                             alpha_range: tuple[float, float] = (0.01, 3.0),
                             r_star_range: tuple[float, float] = (0.1, 1.0e4),
                             grid_size: tuple[int, int] = (120, 101)) -> dict[str, float]:
    """Least-squares fit of values ~ E + A (D'(U, T; R*) / T)^-alpha over a sweep.

    Args:
        unique: Unique samples U of each run.
        total: The budget T (one number, or one per run).
        values: The measured quantity (lower is better, e.g. FVU) of each run.
        alpha_range: Search range of the exponent.
        r_star_range: Search range of R* (searched on a log grid).
        grid_size: Points of the coarse grid over alpha and R* (then two finer grids of 41 x 41,
            or 15 x 15 for a coarse grid of 41 or fewer alphas).

    Returns:
        {"e", "a", "alpha", "r_star", "r2", "sse"}; r2 = 1 - SSE / SST over the runs.
    """
    us, ts, ys = _checked(unique, total, values)

    def evaluate(alpha: float, r_star: float) -> tuple[float, float, float]:
        features = [(effective_samples(u, t, r_star) / t) ** -alpha for u, t in zip(us, ts)]
        return _best_linear(features, ys)

    best: tuple[float, float, float, float, float] | None = None  # sse, alpha, r_star, e, a
    alphas = _grid(*alpha_range, grid_size[0], log=False)
    r_stars = _grid(*r_star_range, grid_size[1], log=True)
    for _ in range(3):  # coarse grid, then two finer grids around the best point
        for alpha in alphas:
            for r_star in r_stars:
                e, a, sse = evaluate(alpha, r_star)
                if best is None or sse < best[0]:
                    best = (sse, alpha, r_star, e, a)
        assert best is not None
        _, alpha0, r0 = best[:3]
        step_a = (alphas[-1] - alphas[0]) / (len(alphas) - 1)
        ratio = (r_stars[-1] / r_stars[0]) ** (1 / (len(r_stars) - 1))
        fine = 41 if grid_size[0] > 41 else 15
        alphas = _grid(max(alpha_range[0], alpha0 - 2 * step_a), min(alpha_range[1], alpha0 + 2 * step_a), fine, log=False)
        r_stars = _grid(max(r_star_range[0], r0 / ratio**2), min(r_star_range[1], r0 * ratio**2), fine, log=True)
    sse, alpha, r_star, e, a = best
    mean = sum(ys) / len(ys)
    sst = sum((y - mean) ** 2 for y in ys)
    return {"e": e, "a": a, "alpha": alpha, "r_star": r_star, "sse": sse, "r2": 1.0 - sse / sst if sst else 1.0}


def data_constrained_r2(unique: Sequence[float], total: float | Sequence[float], values: Sequence[float]) -> float:
    """R^2 of the data-constrained law fitted to (unique, values) at budget `total` (claims)."""
    return fit_data_constrained_law(unique, total, values)["r2"]


def fit_power_law(unique: Sequence[float], total: float | Sequence[float], values: Sequence[float],
                  alpha_range: tuple[float, float] = (0.01, 3.0)) -> dict[str, float]:
    """Least-squares fit of values ~ E + A (U / T)^-alpha: the law when repeats are worth nothing
    (D' = U, the data-constrained law's R* -> 0 limit), with no plateau before U = T.

    Returns {"e", "a", "alpha", "r2", "sse"}, as `fit_data_constrained_law`.
    """
    us, ts, ys = _checked(unique, total, values)
    best: tuple[float, float, float, float] | None = None  # sse, alpha, e, a
    alphas = _grid(*alpha_range, 300, log=False)
    for _ in range(2):
        for alpha in alphas:
            e, a, sse = _best_linear([(u / t) ** -alpha for u, t in zip(us, ts)], ys)
            if best is None or sse < best[0]:
                best = (sse, alpha, e, a)
        assert best is not None
        step = (alphas[-1] - alphas[0]) / (len(alphas) - 1)
        alphas = _grid(max(alpha_range[0], best[1] - 2 * step), min(alpha_range[1], best[1] + 2 * step), 41, log=False)
    sse, alpha, e, a = best
    mean = sum(ys) / len(ys)
    sst = sum((y - mean) ** 2 for y in ys)
    return {"e": e, "a": a, "alpha": alpha, "sse": sse, "r2": 1.0 - sse / sst if sst else 1.0}


def _checked(unique: Sequence[float], total: float | Sequence[float],
             values: Sequence[float]) -> tuple[list[float], list[float], list[float]]:
    us = [float(u) for u in unique]
    ts = [float(total)] * len(us) if isinstance(total, (int, float)) else [float(t) for t in total]
    ys = [float(v) for v in values]
    if not len(us) == len(ts) == len(ys) or len(us) < 3:
        raise ValueError(f"need >= 3 runs with equal-length unique, total and values, got {len(us)}, {len(ts)}, {len(ys)}")
    if not all(0 < u <= t for u, t in zip(us, ts)):
        raise ValueError(f"every unique must be in (0, total], got unique={us}, total={ts}")
    return us, ts, ys


def _predict(fit: dict[str, float], unique: float, total: float) -> float:
    data = effective_samples(unique, total, fit["r_star"]) if "r_star" in fit else unique
    return fit["e"] + fit["a"] * (data / total) ** -fit["alpha"]


def data_constrained_held_out_ratio(unique: Sequence[float], total: float | Sequence[float], values: Sequence[float]) -> float:
    """Leave-one-out error of the data-constrained law over that of the plain power law (claims).

    Each run in turn is held out, both laws are fitted to the others and predict it; the error is
    the squared log ratio of prediction to measurement (relative, so the plateau's points weigh as
    much as the steep small-buffer end). Returns sum(data-constrained) / sum(power law): well
    below 1 when the curve has the law's plateau (repeats worth almost fresh data up to R*),
    about 1 or above when it is a plain power law in U, where the extra parameter R* only
    overfits.
    """
    us, ts, ys = _checked(unique, total, values)
    if len(us) < 5:
        raise ValueError(f"need >= 5 runs to hold one out of a 4-parameter law, got {len(us)}")
    errors = {"data_constrained": 0.0, "power_law": 0.0}
    for i in range(len(us)):
        rest = [j for j in range(len(us)) if j != i]
        sub = ([us[j] for j in rest], [ts[j] for j in rest], [ys[j] for j in rest])
        for name, fit in (("data_constrained", fit_data_constrained_law(*sub, grid_size=(40, 40))), ("power_law", fit_power_law(*sub))):
            errors[name] += math.log(max(_predict(fit, us[i], ts[i]), 1e-12) / ys[i]) ** 2
    return errors["data_constrained"] / errors["power_law"] if errors["power_law"] else math.inf
