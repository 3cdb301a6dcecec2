"""A small convolutional classifier for low-resolution images (8x8 digits, 28x28 MNIST)."""

from __future__ import annotations

from typing import Annotated

import torch
from annotated_types import MinLen
from torch import nn
from components.types import PositiveInt, ProperFraction


class SmallCNN(nn.Module):
    """Stages of conv -> ReLU -> 2x2 max-pool, then global average pooling and a linear head.

    Convolutions are padded to keep the spatial size; pooling uses ceil mode, so a 1x1 map stays
    1x1 and any number of stages works on any input size. The output is (N, out_features).

    Args:
        in_channels: Channels of the input images (N, in_channels, H, W).
        out_features: Width of the output (number of classes for logits).
        channels: Output channels of each conv stage, input side first; at least one stage.
        kernel_size: Odd side length of every convolution kernel.
        dropout: Dropout probability before the linear head, in [0, 1).
    """

    def __init__(
        self,
        in_channels: PositiveInt,
        out_features: PositiveInt,
        channels: Annotated[tuple[PositiveInt, ...], MinLen(1)] = (16, 32),
        kernel_size: PositiveInt = 3,
        dropout: ProperFraction = 0.0,
    ) -> None:
        super().__init__()
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be an odd integer >= 1, got {kernel_size}")
        stages: list[nn.Module] = []
        width = in_channels
        for next_width in channels:
            stages += [
                nn.Conv2d(width, next_width, kernel_size, padding=kernel_size // 2),
                nn.ReLU(),
                nn.MaxPool2d(2, ceil_mode=True),
            ]
            width = next_width
        self.features = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(width, out_features))
        self.in_channels, self.out_features = in_channels, out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map (N, in_channels, H, W) to (N, out_features)."""
        if x.ndim != 4:
            raise ValueError(f"SmallCNN expects input of shape (N, C, H, W), got {tuple(x.shape)}")
        x = self.features(x)
        return self.head(x.mean(dim=(2, 3)))
