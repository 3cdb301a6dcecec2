"""Claim functions of the diffusion family (plain Python, no torch): registered as `claim_functions`.

`min_margin(a, b)`: the smallest paired difference a[i] - b[i] of two equally long columns (e.g.
each seed's mask IoU minus its random-mask IoU), for claims that must hold on every seed.
"""

from __future__ import annotations


def min_margin(a: list[float], b: list[float]) -> float:
    """min over i of a[i] - b[i]; the columns must be non-empty and of equal length."""
    if not a or len(a) != len(b):
        raise ValueError(f"min_margin needs two non-empty columns of equal length, got {len(a)} and {len(b)}")
    return min(x - y for x, y in zip(a, b))
