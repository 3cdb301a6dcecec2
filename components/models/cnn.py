"""A small convolutional classifier for low-resolution images (8x8 digits, 28x28 MNIST)."""

from __future__ import annotations

import torch
from torch import nn


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
        in_channels: int,
        out_features: int,
        channels: tuple[int, ...] = (16, 32),
        kernel_size: int = 3,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if in_channels < 1:
            raise ValueError(f"in_channels must be >= 1, got {in_channels}")
        if out_features < 1:
            raise ValueError(f"out_features must be >= 1, got {out_features}")
        if len(channels) == 0 or any(c < 1 for c in channels):
            raise ValueError(f"channels must be a non-empty list of widths >= 1, got {list(channels)}")
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be an odd integer >= 1, got {kernel_size}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
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
