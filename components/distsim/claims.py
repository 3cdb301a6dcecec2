"""Claim functions of the distsim family (plain Python, no torch): registered as `claim_functions`.

`interior_grid(indices, size)`: whether every run's tuned stepsize (`test/best_index` of the
`distributed_time` task, 0-based in a grid of `size`) is an interior point of the grid. True when
all are; otherwise undecided (the optimum may lie beyond the grid), so a claim that needs it is
inconclusive, the rule the sweep-level best-setting functions follow (framework.claims.evidence).
"""

from __future__ import annotations

from typing import Any

from framework.claims.evidence import Undecided


def interior_grid(indices: list[float], size: float) -> Any:
    """True when every index lies strictly inside a grid of `size`; undecided when one is at an edge."""
    if not indices:
        raise ValueError("interior_grid needs a non-empty list of indices")
    n = int(size)
    edges = sorted({int(i) for i in indices if int(i) <= 0 or int(i) >= n - 1})
    if edges:
        return Undecided(f"a tuned stepsize at the grid's edge (index {edges} of 0..{n - 1})")
    return True
