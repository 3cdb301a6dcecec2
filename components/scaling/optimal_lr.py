"""The best learning rate of a sweep over a learning-rate grid, and how far it moves, for claims.yaml
checks (plain Python over a sweep's per-configuration lists, e.g. `seed_mean(run, 'val/loss')` and
`seed_param(run, 'optimizer.lr')`; no torch).

A near-flat basin makes the plain argmin noisy (two grid rates within a few thousandths of a nat
swap places from seed to seed), so the optimum is the basin centre (NOTES.md, hybrid_mup): the
geometric mean of every grid rate whose loss is within `tolerance` (relative) of the best loss.
"""

from __future__ import annotations

import math

from framework.claims.evidence import Interval, bounds


def basin_centre_lr(losses: list[float], lrs: list[float], tolerance: float = 0.01) -> float | Interval:
    """Geometric mean of the rates whose loss is <= (1 + tolerance) x the smallest loss (losses > 0;
    a non-finite loss, a diverged run, is never in the basin). When the basin reaches the grid's
    first or last rate it may go on beyond the grid, so its centre is a range open on that side
    (framework.claims.evidence: a check on it is then inconclusive unless it holds for all of it)."""
    if len(losses) != len(lrs) or not losses:
        raise ValueError(f"basin_centre_lr needs two equal-length, non-empty lists, got {len(losses)} losses "
                         f"and {len(lrs)} rates")
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    finite = [(loss, lr) for loss, lr in zip(losses, lrs) if math.isfinite(loss)]
    if not finite:
        raise ValueError("basin_centre_lr: every loss is non-finite (every run diverged)")
    best = min(loss for loss, _ in finite)
    if best <= 0:
        raise ValueError(f"basin_centre_lr needs positive losses, got a smallest loss of {best}")
    basin = [lr for loss, lr in finite if loss <= best * (1 + tolerance)]
    centre = math.exp(sum(math.log(lr) for lr in basin) / len(basin))
    low_edge, high_edge = min(basin) == min(lrs), max(basin) == max(lrs)
    if len(set(lrs)) < 2 or not (low_edge or high_edge):
        return centre
    edges = [f"the grid's {which} rate {lr:.4g}" for which, lr, edge in
             (("first", min(lrs), low_edge), ("last", max(lrs), high_edge)) if edge]
    return Interval(0.0 if low_edge else centre, math.inf if high_edge else centre,
                    f"basin reaches {' and '.join(edges)}")


def lr_shift_octaves(losses_a: list[float], lrs_a: list[float], losses_b: list[float], lrs_b: list[float],
                     tolerance: float = 0.01) -> float | Interval:
    """log2(basin centre of b / basin centre of a): how many doublings the best rate moves from
    sweep a to sweep b (negative: b prefers a smaller rate); a range when a basin reaches its
    grid's edge."""
    a = basin_centre_lr(losses_a, lrs_a, tolerance)
    b = basin_centre_lr(losses_b, lrs_b, tolerance)
    if not isinstance(a, Interval) and not isinstance(b, Interval):
        return math.log2(b / a)
    (a_low, a_high), (b_low, b_high) = bounds(a), bounds(b)
    what = "; ".join(x.what for x in (a, b) if isinstance(x, Interval))
    return Interval(_log2_ratio(b_low, a_high), _log2_ratio(b_high, a_low), what)


def _log2_ratio(top: float, bottom: float) -> float:
    """log2(top / bottom) for rates in [0, inf], with its limits at the ends."""
    if top == 0 or bottom == math.inf:
        return -math.inf
    if bottom == 0 or top == math.inf:
        return math.inf
    return math.log2(top / bottom)
