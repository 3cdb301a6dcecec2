"""Cross-attention layer: a sequence's positions read a second set of tokens (a context).

`CrossAttentionLayer` is pre-norm multi-head attention (torch's nn.MultiheadAttention) from the
queries (B, L, d) to the context (B, N, d), added to the queries (residual), then a pre-norm
feed-forward layer, also residual. A key-padding mask (B, N), True where a context token is
absent, lets contexts of different lengths share a batch (sessions with different unit counts).
Used by beemo's behaviour decoder (components/neural_decoding/decoder.py), where neural tokens
enter the behaviour stream only when a batch is paired.
"""

from __future__ import annotations

import torch
from torch import nn


class CrossAttentionLayer(nn.Module):
    """Queries read a context by multi-head attention, then a feed-forward layer (module docstring)."""

    def __init__(self, d_model: int, n_heads: int = 4, ff_mult: int = 2) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={d_model}, n_heads={n_heads}")
        self.norm_q, self.norm_kv, self.norm_ff = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model))

    def forward(self, queries: torch.Tensor, context: torch.Tensor,
                padding: torch.Tensor | None = None) -> torch.Tensor:
        context = self.norm_kv(context)
        h = queries + self.attention(self.norm_q(queries), context, context, key_padding_mask=padding,
                                     need_weights=False)[0]
        return h + self.ff(self.norm_ff(h))
