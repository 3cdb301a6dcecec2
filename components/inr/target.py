"""The target network of an INR hypernetwork: a Fourier-feature ReLU MLP evaluated with a separate
weight set per signal (batched weights), so a hypernetwork can emit B networks in one tensor.

Layout of a weight set: a list with one (W, b) pair per layer, W of shape (B, out, in) and b of
shape (B, out); `TargetINR.shapes` gives (out, in) per layer.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from components.types import NonNegativeInt, PositiveInt

Weights = list[tuple[torch.Tensor, torch.Tensor]]


def fourier_features(coords: torch.Tensor, frequencies: int) -> torch.Tensor:
    """NeRF-style positional encoding of coordinates in [-1, 1]: the coordinates themselves, then
    sin and cos of pi * 2^k * coordinate for k = 0 .. frequencies - 1 (axis-aligned, no randomness,
    so the encoding is the same in every run). (..., D) -> (..., D * (1 + 2 * frequencies))."""
    if frequencies == 0:
        return coords
    scales = math.pi * 2.0 ** torch.arange(frequencies, dtype=coords.dtype, device=coords.device)
    angles = (coords[..., None] * scales).flatten(-2)
    return torch.cat([coords, torch.sin(angles), torch.cos(angles)], dim=-1)


class TargetINR(nn.Module):
    """The shape of the target INR and its functional forward pass; it holds no weights.

    Args:
        coord_dims: Dimensions of a coordinate (2 for images).
        out_channels: Values per coordinate (1 grey, 3 RGB).
        width: Neurons of each hidden layer.
        depth: Number of hidden layers.
        frequencies: Octaves of the Fourier features (0: raw coordinates).
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4) -> None:
        super().__init__()
        self.coord_dims, self.out_channels, self.width, self.depth = coord_dims, out_channels, width, depth
        self.frequencies = frequencies
        self.in_features = coord_dims * (1 + 2 * frequencies)
        sizes = [self.in_features] + [width] * depth + [out_channels]
        self.shapes = [(sizes[i + 1], sizes[i]) for i in range(depth + 1)]

    def neurons(self) -> list[int]:
        """Neurons per level: the input features, then each layer's outputs."""
        return [self.in_features] + [out for out, _ in self.shapes]

    def init_weights(self, batch: int, generator: torch.Generator | None = None) -> Weights:
        """torch.nn.Linear's default initialization, U(-1/sqrt(in), 1/sqrt(in)), one draw per signal."""
        weights = []
        for out, fan_in in self.shapes:
            bound = 1.0 / math.sqrt(fan_in)
            w = (torch.rand(batch, out, fan_in, generator=generator) * 2 - 1) * bound
            b = (torch.rand(batch, out, generator=generator) * 2 - 1) * bound
            weights.append((w, b))
        return weights

    def forward(self, weights: Weights, coords: torch.Tensor, return_hidden: bool = False):
        """Values at coords (B, P, coord_dims) -> (B, P, out_channels) under each signal's weights;
        with return_hidden also the inputs of every layer (features, then hidden activations)."""
        if len(weights) != len(self.shapes):
            raise ValueError(f"expected {len(self.shapes)} (W, b) pairs, got {len(weights)}")
        h = fourier_features(coords, self.frequencies)
        hidden = [h]
        for index, (w, b) in enumerate(weights):
            h = torch.einsum("bpi,boi->bpo", h, w) + b[:, None, :]
            if index < len(weights) - 1:
                h = torch.relu(h)
                hidden.append(h)
        return (h, hidden) if return_hidden else h


def signal_mse(prediction: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Mean squared error of each signal over its points and channels: (B, P, C) x2 -> (B,)."""
    return (prediction - values).pow(2).flatten(1).mean(1)
