"""An encoder and a linear classifier on its representation: the network gradual domain adaptation
adapts (the encoder is pretrained on the labelled source; FlowGDA transports its representations)."""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.models.mlp import MLP
from components.types import PositiveInt, ProperFraction


class EncoderClassifier(nn.Module):
    """logits = head(encoder(x)), encoder an MLP to `latent_dim` features, head one linear layer.

    Args:
        in_features: Width of an example (N, in_features).
        out_features: Number of classes.
        latent_dim: Width of the representation the head reads (and flows transport).
        hidden: Hidden widths of the encoder MLP.
        activation: Nonlinearity of the encoder.
        dropout: Dropout after each hidden activation of the encoder.
    """

    def __init__(self, in_features: PositiveInt, out_features: PositiveInt, latent_dim: PositiveInt = 32,
                 hidden: tuple[PositiveInt, ...] = (64,), activation: Literal["relu", "gelu", "tanh"] = "relu",
                 dropout: ProperFraction = 0.0) -> None:
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = MLP(in_features, latent_dim, hidden, activation, dropout)
        self.head = nn.Linear(latent_dim, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, in_features) -> (N, out_features) logits."""
        return self.head(self.encoder(x))
