"""Edit rewards: how the judge's two scores become the scalar the policy gradient maximises.

Called as reward(implemented, unintended) -> (B,) rewards, both inputs (B,) in [0, 1]
(components/editing/oracle.py: the probability that the asked change is there, and the mean
probability that another attribute changed). The paper's point is the second term: a reward that
scores only the edit lets the editor change anything else on the way.
"""

from __future__ import annotations

import torch

from components.types import NonNegativeFloat


class MinimalChange:
    """Minimal-change reward: implemented - unintended_weight x unintended (the paper's reward,
    "implemented change minus unintended change"; lambda = `unintended_weight`).

    Args:
        unintended_weight: lambda, the price of an unintended change relative to the edit.
    """

    def __init__(self, unintended_weight: NonNegativeFloat = 1.0) -> None:
        self.unintended_weight = unintended_weight

    def __call__(self, implemented: torch.Tensor, unintended: torch.Tensor) -> torch.Tensor:
        return implemented - self.unintended_weight * unintended


class EditOnly:
    """Edit-only reward: implemented (what an instruction-following reward scores; nothing keeps
    the rest of the image as it was)."""

    def __call__(self, implemented: torch.Tensor, unintended: torch.Tensor) -> torch.Tensor:
        return implemented
