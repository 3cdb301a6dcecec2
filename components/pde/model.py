"""The latent next-step transformer of lgs_pde: reads the last `context` latents and predicts the
next one, either as a flow-matching velocity (given a noisy state x and a flow time t) or directly.

Tokens: each context latent through a linear map, then one query token: the flow state x through
another linear map plus an MLP of sinusoidal features of t, or (deterministic use, x = None) a
learned vector. Learned positions; the pre-LayerNorm blocks of components/sequence
(`MixerBlock` around causal `SoftmaxAttention`, so the query token, last, reads every context
latent); a linear head on the query token's output gives the (B, latent_dim) prediction. A stand-in
for the paper's PFlowFT (a pyramidal flow-forcing transformer over 2-D latent patches).
"""

from __future__ import annotations

import torch
from torch import nn

from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import MixerBlock
from components.types import PositiveInt


class LatentTransformer(nn.Module):
    """f(context (B, context, latent_dim), x (B, latent_dim) | None, t (B,) | None) -> (B, latent_dim).

    Args:
        latent_dim: Width of a latent (the VAE's latent_dim).
        context: Latents the model reads.
        d_model: Width of the residual stream.
        n_layers: Transformer blocks.
        n_heads: Attention heads; must divide d_model.
        mlp_ratio: MLP width as a multiple of d_model.
        time_features: Sinusoidal features of the flow time (even).
    """

    def __init__(self, latent_dim: PositiveInt = 16, context: PositiveInt = 2, d_model: PositiveInt = 64,
                 n_layers: PositiveInt = 2, n_heads: PositiveInt = 4, mlp_ratio: PositiveInt = 4,
                 time_features: PositiveInt = 16) -> None:
        super().__init__()
        if time_features % 2:
            raise ValueError(f"time_features must be even, got {time_features}")
        self.latent_dim, self.context = latent_dim, context
        self.read_context = nn.Linear(latent_dim, d_model)
        self.read_state = nn.Linear(latent_dim, d_model)
        self.query = nn.Parameter(torch.zeros(d_model))
        self.register_buffer("frequencies", 2 * torch.pi * torch.arange(1, time_features // 2 + 1, dtype=torch.float32))
        self.time_mlp = nn.Sequential(nn.Linear(time_features + 1, d_model), nn.SiLU(), nn.Linear(d_model, d_model))
        self.position = nn.Parameter(0.02 * torch.randn(context + 1, d_model))
        self.blocks = nn.ModuleList(MixerBlock(SoftmaxAttention(d_model, n_heads), d_model, mlp_ratio, 0.0)
                                    for _ in range(n_layers))
        self.ln_final = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, latent_dim)

    def query_token(self, x: torch.Tensor | None, t: torch.Tensor | None, batch: int) -> torch.Tensor:
        """(B, d_model): the flow state and time, or the learned query when x is None."""
        if x is None:
            return self.query.expand(batch, -1)
        if t is None:
            raise ValueError("a flow state x needs its time t")
        angles = t.to(x.dtype)[:, None] * self.frequencies
        return self.read_state(x) + self.time_mlp(torch.cat([t.to(x.dtype)[:, None], angles.sin(), angles.cos()], 1))

    def forward(self, context: torch.Tensor, x: torch.Tensor | None = None,
                t: torch.Tensor | None = None) -> torch.Tensor:
        if context.shape[1:] != (self.context, self.latent_dim):
            raise ValueError(f"LatentTransformer expects a context (B, {self.context}, {self.latent_dim}), "
                             f"got {tuple(context.shape)}")
        tokens = torch.cat([self.read_context(context), self.query_token(x, t, len(context))[:, None]], 1)
        h = tokens + self.position
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln_final(h[:, -1]))
