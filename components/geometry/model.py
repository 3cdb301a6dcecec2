"""`pointmap_cnn`: a small convolutional geometry model for sage_geo at tiny scale.

One RGB frame (B, 3, H, W) -> its pointmap (B, H, W, 3) in the camera frame. The network predicts a
per-pixel depth (exp of its output, the bias starting at log 3), and the pointmap is depth x the
pixel's ray (the camera's intrinsics are known), so every point lies on its pixel's ray: a pointmap
head constrained to the rays, where the paper's backbones (MV-DUSt3R, VGGT) regress pointmaps of
several views freely. Layers: the image plus two pixel-coordinate channels -> conv 3x3 (width) ->
two stride-2 convs (width x 2) -> a global-context vector added back -> upsampled to full size,
concatenated with the first layer's features -> two convs -> log depth.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from components.geometry.ops import unproject
from components.types import PositiveFloat, PositiveInt


class PointmapCNN(nn.Module):
    """Args:
        focal: The camera's focal length in pixels (the rays the depths are taken along).
        width: Channels of the first layer (the coarse layers have twice as many).
        in_channels: Image channels.
    """

    def __init__(self, focal: PositiveFloat = 22.0, width: PositiveInt = 32, in_channels: PositiveInt = 3) -> None:
        super().__init__()
        self.focal = focal
        self.stem = nn.Sequential(nn.Conv2d(in_channels + 2, width, 3, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.ReLU())
        self.context = nn.Linear(2 * width, 2 * width)
        self.up = nn.Sequential(nn.Conv2d(3 * width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, 1, 3, padding=1))
        nn.init.constant_(self.up[-1].bias, math.log(3.0))

    def depth(self, image: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) -> (B, H, W) positive depth."""
        b, _, h, w = image.shape
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        coords = torch.stack([xs, ys]).to(image)[None].expand(b, -1, -1, -1)
        stem = self.stem(torch.cat([image, coords], 1))
        coarse = self.down(stem)
        coarse = coarse + self.context(coarse.mean((2, 3)))[:, :, None, None]
        up = F.interpolate(coarse, size=(h, w), mode="bilinear", align_corners=False)
        return self.up(torch.cat([stem, up], 1))[:, 0].clamp(-3, 4).exp()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return unproject(self.depth(image), self.focal)
