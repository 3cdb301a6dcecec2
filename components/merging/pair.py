"""Two endpoints of one architecture in one model: what a linear-mode-connectivity analysis reads.

The framework hands a stage the final weights of ONE earlier stage (`init: {stage: s}`); a merge
needs two independently trained networks. `endpoint_pair` holds both (members `a` and `b`, each a
components.models.mlp.MLP of the same shape, initialized one after the other from the run's
random state, so with different weights) and trains one of them at a time: with `train: a` the
forward pass is member a's and only a's weights receive gradients (b's stay at their
initialization and the optimizer skips them: their gradient is None); a second stage with
`init: {stage: <first>}` and `train: b` trains member b from its own initialization, with its
own data order when the stage's seed differs. A later `posthoc_analysis` stage loads both.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.models.mlp import MLP
from components.types import PositiveInt


class EndpointPair(nn.Module):
    """Two ReLU MLPs of the same shape (members `a`, `b`); the forward pass is the `train` member's.

    Args:
        in_features: Width of the input rows.
        out_features: Number of classes (logits).
        hidden: Widths of the hidden layers, input side first (at least one).
        train: Which member the forward pass (and so training) uses.
    """

    def __init__(self, in_features: PositiveInt, out_features: PositiveInt,
                 hidden: tuple[PositiveInt, ...] = (64,), train: Literal["a", "b"] = "a") -> None:
        super().__init__()
        if train not in ("a", "b"):
            raise ValueError(f"train must be 'a' or 'b', got {train!r}")
        if len(hidden) < 1:
            raise ValueError("hidden needs at least one layer: a linear model has no hidden units to align")
        self.a = MLP(in_features, out_features, tuple(hidden), activation="relu")
        self.b = MLP(in_features, out_features, tuple(hidden), activation="relu")
        self.active = train

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.a if self.active == "a" else self.b)(x)

    def members(self) -> tuple[MLP, MLP]:
        return self.a, self.b
