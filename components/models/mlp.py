"""Multi-layer perceptron for tabular inputs."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from components.types import PositiveInt, ProperFraction

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


class MLP(nn.Module):
    """Linear -> activation -> dropout per hidden layer, then a linear head.

    The output is always (N, out_features), also when out_features == 1: losses and metrics that
    take a single logit or prediction (bce, mse, auroc) accept (N, 1) and squeeze it themselves.

    Args:
        in_features: Width of the input rows (N, in_features).
        out_features: Width of the output: the number of classes (logits) or of regression targets.
        hidden: Widths of the hidden layers, input side first; empty for a linear model.
        activation: Nonlinearity after each hidden layer.
        dropout: Dropout probability after each hidden activation, in [0, 1).
    """

    def __init__(
        self,
        in_features: PositiveInt,
        out_features: PositiveInt,
        hidden: tuple[PositiveInt, ...] = (64,),
        activation: Literal["relu", "gelu", "tanh"] = "relu",
        dropout: ProperFraction = 0.0,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got '{activation}'")
        layers: list[nn.Module] = []
        width = in_features
        for next_width in hidden:
            layers += [nn.Linear(width, next_width), ACTIVATIONS[activation]()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = next_width
        layers.append(nn.Linear(width, out_features))
        self.net = nn.Sequential(*layers)
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (N, in_features) to (N, out_features)."""
        return self.net(x)
