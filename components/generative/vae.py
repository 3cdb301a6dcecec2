"""A small convolutional VAE over 1-D fields (B, C, L) or 2-D images (B, C, H, W).

Encoder: per entry of `channels`, a stride-2 conv (k=3) + SiLU, halving every spatial side; then a
linear map to the latent mean and log-variance (B, latent_dim). Decoder: the mirror image, with
nearest-neighbour upsampling + conv (not transposed convs, so `padding_mode: circular` holds for
periodic domains such as PDE grids) and a final conv to the input's channels (no output
nonlinearity: inputs are taken as real-valued, e.g. standardised fields or images in [0, 1]).

Objective (`loss_terms`): per-example summed squared error (a Gaussian likelihood with unit
variance up to constants) and the KL of N(mu, sigma^2) from N(0, I), each averaged over the batch;
`loss = reconstruction + beta * kl`. `beta: 0` is a plain (deterministic) autoencoder: the latent
is the mean, no noise is drawn and no KL is paid.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.types import NonNegativeFloat, PositiveInt


class ConvVAE(nn.Module):
    """Conv VAE for 1-D or 2-D inputs; `encode`/`decode`/`loss_terms` are its interface.

    Args:
        in_channels: Channels of the input (C).
        size: Spatial side of the input (L for 1-D; H = W for 2-D); divisible by 2**len(channels).
        latent_dim: Width of the latent vector.
        dims: 1 for (B, C, L) fields, 2 for (B, C, H, W) images.
        channels: Conv widths of the encoder stages (each halves the sides); the decoder mirrors them.
        beta: Weight of the KL term; 0 makes a deterministic autoencoder.
        padding_mode: "zeros", or "circular" for periodic domains.
    """

    def __init__(self, in_channels: PositiveInt, size: PositiveInt, latent_dim: PositiveInt = 16,
                 dims: Literal[1, 2] = 2, channels: tuple[PositiveInt, ...] = (32, 64), beta: NonNegativeFloat = 1e-3,
                 padding_mode: Literal["zeros", "circular"] = "zeros") -> None:
        super().__init__()
        if dims not in (1, 2):
            raise ValueError(f"dims must be 1 or 2, got {dims}")
        if not channels:
            raise ValueError("channels must name at least one encoder stage")
        if size % 2 ** len(channels):
            raise ValueError(f"size {size} must be divisible by 2**len(channels) = {2 ** len(channels)}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        conv = nn.Conv1d if dims == 1 else nn.Conv2d
        self.in_channels, self.size, self.latent_dim, self.dims, self.beta = in_channels, size, latent_dim, dims, beta
        self.inner_shape = (channels[-1],) + (size // 2 ** len(channels),) * dims
        inner = channels[-1] * (size // 2 ** len(channels)) ** dims
        encoder: list[nn.Module] = []
        width = in_channels
        for next_width in channels:
            encoder += [conv(width, next_width, 3, stride=2, padding=1, padding_mode=padding_mode), nn.SiLU()]
            width = next_width
        self.encoder = nn.Sequential(*encoder, nn.Flatten())
        self.to_moments = nn.Linear(inner, 2 * latent_dim)
        self.from_latent = nn.Linear(latent_dim, inner)
        decoder: list[nn.Module] = []
        for next_width in list(reversed(channels[:-1])) + [channels[0]]:
            decoder += [nn.Upsample(scale_factor=2, mode="nearest"),
                        conv(width, next_width, 3, padding=1, padding_mode=padding_mode), nn.SiLU()]
            width = next_width
        decoder.append(conv(width, in_channels, 3, padding=1, padding_mode=padding_mode))
        self.decoder = nn.Sequential(*decoder)

    def check_input(self, x: torch.Tensor) -> None:
        expected = (self.in_channels,) + (self.size,) * self.dims
        if tuple(x.shape[1:]) != expected:
            raise ValueError(f"ConvVAE expects inputs (B, {', '.join(map(str, expected))}), got {tuple(x.shape)}")

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Input -> (mean, log-variance), each (B, latent_dim)."""
        self.check_input(x)
        mean, logvar = self.to_moments(self.encoder(x)).chunk(2, dim=1)
        return mean, logvar.clamp(-20.0, 10.0)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """(B, latent_dim) -> a reconstruction shaped like the input."""
        return self.decoder(self.from_latent(z).reshape(z.shape[0], *self.inner_shape))

    def sample_latent(self, mean: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        """z = mean + sigma * eps while training a VAE; the mean otherwise (and always when beta is 0)."""
        if self.training and self.beta > 0:
            return mean + (0.5 * logvar).exp() * torch.randn_like(mean)
        return mean

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """{"reconstruction", "mean", "logvar", "z"} for a batch of inputs."""
        mean, logvar = self.encode(x)
        z = self.sample_latent(mean, logvar)
        return {"reconstruction": self.decode(z), "mean": mean, "logvar": logvar, "z": z}

    def loss_terms(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """{"loss", "reconstruction", "kl", "relative_error"}: batch means of the per-example summed
        squared error, the KL and ||x_hat - x|| / ||x|| (the last is reported, not trained on)."""
        out = self(x)
        reconstruction = (out["reconstruction"] - x).pow(2).flatten(1).sum(1).mean()
        kl = 0.5 * (out["mean"].pow(2) + out["logvar"].exp() - 1 - out["logvar"]).sum(1).mean()
        error = (out["reconstruction"] - x).detach().flatten(1).norm(dim=1) / x.flatten(1).norm(dim=1).clamp_min(1e-12)
        return {"loss": reconstruction + self.beta * kl, "reconstruction": reconstruction, "kl": kl,
                "relative_error": error.mean()}
