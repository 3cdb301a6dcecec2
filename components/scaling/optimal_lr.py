"""The best learning rate of a sweep over a learning-rate grid, and how far it moves, for claims.yaml
checks (plain Python over a sweep's per-configuration lists, e.g. `seed_mean(run, 'val/loss')` and
`seed_param(run, 'optimizer.lr')`; no torch).

A near-flat basin makes the plain argmin noisy (two grid rates within a few thousandths of a nat
swap places from seed to seed), so the optimum is the basin centre (NOTES.md, hybrid_mup): the
geometric mean of every grid rate whose loss is within `tolerance` (relative) of the best loss.
"""

from __future__ import annotations

import math


def basin_centre_lr(losses: list[float], lrs: list[float], tolerance: float = 0.01) -> float:
    """Geometric mean of the rates whose loss is <= (1 + tolerance) x the smallest loss (losses > 0;
    a non-finite loss, a diverged run, is never in the basin)."""
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
    return math.exp(sum(math.log(lr) for lr in basin) / len(basin))


def lr_shift_octaves(losses_a: list[float], lrs_a: list[float], losses_b: list[float], lrs_b: list[float],
                     tolerance: float = 0.01) -> float:
    """log2(basin centre of b / basin centre of a): how many doublings the best rate moves from
    sweep a to sweep b (negative: b prefers a smaller rate)."""
    return math.log2(basin_centre_lr(losses_b, lrs_b, tolerance) / basin_centre_lr(losses_a, lrs_a, tolerance))
