"""Sparse autoencoders (SAEs) with hard sparsity: TopK and BatchTopK.

Both encode x (N, d_in) as z = sparse(ReLU(W_enc (x - b_dec) + b_enc)) with n_latents latents and
decode x_hat = z W_dec + b_dec, where W_dec's rows (the dictionary) are kept at unit norm
(`normalize_decoder()` after each optimizer step). The encoder starts as the decoder's transpose.

- TopK (Gao et al. 2024, "Scaling and evaluating sparse autoencoders"): each row keeps its k
  largest pre-activations.
- BatchTopK (Bussmann et al. 2024, "BatchTopK Sparse Autoencoders"): in training the batch keeps
  its k * N largest pre-activations (k per row on average, adaptive per row); at inference a
  single threshold theta (a running average of the smallest kept activation per training batch)
  replaces the batch coupling, so a row's code does not depend on its batch.

`sae_replay` (specs/sae_replay/) trains both on a frozen LM's residual stream.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from components.types import PositiveInt, ProperFraction


class TopKSAE(nn.Module):
    """TopK SAE: x (N, d_in) -> reconstruction (N, d_in); `encode`/`decode` give the code.

    Args:
        d_in: Width of the activations.
        n_latents: Number of dictionary atoms (latents).
        k: Active latents per row (at most).
    """

    def __init__(self, d_in: PositiveInt, n_latents: PositiveInt, k: PositiveInt) -> None:
        super().__init__()
        if k > n_latents:
            raise ValueError(f"k must be in [1, n_latents = {n_latents}], got {k}")
        self.d_in, self.n_latents, self.k = d_in, n_latents, k
        decoder = torch.randn(n_latents, d_in)
        decoder /= decoder.norm(dim=1, keepdim=True)
        self.W_dec = nn.Parameter(decoder)
        self.W_enc = nn.Parameter(decoder.clone())
        self.b_enc = nn.Parameter(torch.zeros(n_latents))
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_in:
            raise ValueError(f"the SAE's d_in is {self.d_in} but the activations have width {x.shape[-1]}")
        return F.linear(x - self.b_dec, self.W_enc, self.b_enc)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.pre_activations(x)
        values, index = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, index, F.relu(values))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return z @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        """Rescale the dictionary atoms to unit norm (called after each optimizer step)."""
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))

    @torch.no_grad()
    def init_decoder_bias(self, mean: torch.Tensor) -> None:
        """Start b_dec at the data mean, so the code first explains deviations from it."""
        self.b_dec.copy_(mean.to(self.b_dec))


class BatchTopKSAE(TopKSAE):
    """BatchTopK SAE: k * N active latents per training batch of N rows; a threshold at inference.

    Args:
        d_in: Width of the activations.
        n_latents: Number of dictionary atoms (latents).
        k: Average active latents per row.
        threshold_decay: Decay of the running average that estimates the inference threshold
            from each training batch's smallest kept activation, in [0, 1).
    """

    def __init__(self, d_in: PositiveInt, n_latents: PositiveInt, k: PositiveInt,
                 threshold_decay: ProperFraction = 0.99) -> None:
        super().__init__(d_in, n_latents, k)
        self.threshold_decay = threshold_decay
        # < 0: not estimated yet (no training step); inference then falls back to per-row TopK.
        self.register_buffer("threshold", torch.tensor(-1.0))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        pre = F.relu(self.pre_activations(x))
        if not self.training:
            if self.threshold < 0:
                return super().encode(x)
            return pre * (pre > self.threshold)
        flat = pre.reshape(-1)
        values, index = flat.topk(min(self.k * pre.shape[0], flat.numel()))
        z = torch.zeros_like(flat).scatter(0, index, values).view_as(pre)
        positive = values[values > 0]
        if positive.numel():
            smallest = positive.min().detach()
            with torch.no_grad():
                if self.threshold < 0:
                    self.threshold.copy_(smallest)
                else:
                    self.threshold.mul_(self.threshold_decay).add_((1 - self.threshold_decay) * smallest)
        return z
