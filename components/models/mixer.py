"""MLP-Mixer (Tolstikhin et al. 2021, "MLP-Mixer: An all-MLP Architecture for Vision") for small
square images given as flat rows (sklearn digits: (N, 64) -> 8 x 8).

Used by autop (specs/autop/) as a model outside the muP table: its token-mixing MLPs contract
over the patch axis, which does not grow with the width. `upsample` repeats each pixel u x u times
before the image is cut into patches, so the number of patches (the Mixer's context length, the
axis the token-mixing MLPs contract) grows u^2-fold while the patch size, the width and the image
content stay the same: autop's context-length experiment.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from components.types import PositiveInt


class MixerLayer(nn.Module):
    """x + TokenMLP(LN(x)) over the patch axis, then x + ChannelMLP(LN(x)) over the channels."""

    def __init__(self, patches: int, width: int, token_hidden: int, channel_hidden: int) -> None:
        super().__init__()
        self.ln_token, self.ln_channel = nn.LayerNorm(width), nn.LayerNorm(width)
        self.token_mlp = nn.Sequential(nn.Linear(patches, token_hidden), nn.GELU(), nn.Linear(token_hidden, patches))
        self.channel_mlp = nn.Sequential(nn.Linear(width, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.ln_token(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.ln_channel(x))


class MLPMixer(nn.Module):
    """Patches -> linear embedding to `width` channels -> `depth` mixer layers -> LayerNorm ->
    mean over patches -> linear head: (N, in_features) -> (N, out_features).

    Args:
        in_features: Pixels per image, a square (64 for 8 x 8 digits).
        out_features: Number of classes.
        patch_size: Side of the square patches; must divide the image side.
        width: Channels per patch (the axis width scaling grows).
        depth: Number of mixer layers.
        token_hidden: Hidden width of the token-mixing MLPs (fixed: it does not follow `width`).
        channel_ratio: Hidden width of the channel MLPs as a multiple of `width`.
        upsample: Each pixel is repeated upsample x upsample times (nearest neighbour) before
            patching: (side / patch_size)^2 x upsample^2 patches of the same size.
    """

    def __init__(
        self,
        in_features: PositiveInt,
        out_features: PositiveInt,
        patch_size: PositiveInt = 2,
        width: PositiveInt = 64,
        depth: PositiveInt = 2,
        token_hidden: PositiveInt = 32,
        channel_ratio: PositiveInt = 2,
        upsample: PositiveInt = 1,
    ) -> None:
        super().__init__()
        side = math.isqrt(in_features)
        if side * side != in_features:
            raise ValueError(f"in_features must be a square number of pixels, got {in_features}")
        if (side * upsample) % patch_size:
            raise ValueError(f"patch_size must divide the image side {side} x upsample {upsample}, got {patch_size}")
        self.side, self.patch_size, self.upsample = side, patch_size, upsample
        patches = (side * upsample // patch_size) ** 2
        self.embed = nn.Linear(patch_size * patch_size, width)
        self.layers = nn.Sequential(*(MixerLayer(patches, width, token_hidden, channel_ratio * width)
                                      for _ in range(depth)))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, out_features)
        self.in_features, self.out_features = in_features, out_features

    def patches(self, x: torch.Tensor) -> torch.Tensor:
        """(N, side * side) -> (N, patches, patch_size ** 2), patches in row-major order (of the
        image upsampled `upsample`-fold)."""
        p, s = self.patch_size, self.side * self.upsample
        if self.upsample > 1:
            x = x.reshape(-1, self.side, self.side)
            x = x.repeat_interleave(self.upsample, dim=1).repeat_interleave(self.upsample, dim=2)
        x = x.reshape(-1, s // p, p, s // p, p).permute(0, 1, 3, 2, 4)
        return x.reshape(x.shape[0], -1, p * p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.layers(self.embed(self.patches(x)))
        return self.head(self.ln(h).mean(dim=1))
