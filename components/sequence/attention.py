"""Causal sequence mixers: softmax attention and linear attention with a pluggable feature map.

A sequence mixer is built by a factory the model calls once per layer with `d_model`; it maps
(B, L, d_model) -> (B, L, d_model) and position t reads positions <= t only (softmax attention
with `causal: false` is the one bidirectional exception, for denoisers).

Linear attention (Katharopoulos et al. 2020) replaces softmax's exp(q . k) by phi(q) . phi(k):
out_t = sum_{s<=t} (phi(q_t) . phi(k_s)) v_s / sum_{s<=t} phi(q_t) . phi(k_s). `causal_linear_attention`
computes it in chunks: inside a chunk the masked (C x C) form, across chunks a running state
sum phi(k_s) v_s^T and normalizer sum phi(k_s), so time and memory grow linearly in L.
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
import torch.nn.functional as F
from torch import nn

from components.kinds import Kind
from components.types import PositiveFloat, PositiveInt, ProperFraction

FeatureMap = Annotated[Any, Kind("feature_maps")]


def causal_linear_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, chunk_size: int = 64,
                            eps: float = 1e-6) -> torch.Tensor:
    """out_t = sum_{s<=t} (phi_q_t . phi_k_s) v_s / (sum_{s<=t} phi_q_t . phi_k_s + eps).

    phi_q, phi_k: (..., L, m) non-negative features; v: (..., L, d_v); returns (..., L, d_v).
    Exact (up to round-off) for any chunk_size >= 1; the chunk trades the masked C x C products
    against the number of sequential state updates.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    length = phi_q.shape[-2]
    state = phi_q.new_zeros(*phi_q.shape[:-2], phi_q.shape[-1], v.shape[-1])
    normalizer = phi_q.new_zeros(*phi_q.shape[:-2], phi_q.shape[-1])
    outputs = []
    for start in range(0, length, chunk_size):
        q, k, val = (t[..., start:start + chunk_size, :] for t in (phi_q, phi_k, v))
        scores = (q @ k.transpose(-1, -2)).tril()
        numerator = q @ state + scores @ val
        denominator = (q * normalizer.unsqueeze(-2)).sum(-1) + scores.sum(-1)
        outputs.append(numerator / (denominator.unsqueeze(-1) + eps))
        state = state + k.transpose(-1, -2) @ val
        normalizer = normalizer + k.sum(-2)
    return torch.cat(outputs, dim=-2)


class _HeadsMixer(nn.Module):
    """qkv projection into heads and the output projection around a per-head attention."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={d_model}, n_heads={n_heads}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, L, d_model) -> q, k, v each (B, n_heads, L, head_dim)."""
        b, length, _ = x.shape
        return tuple(t.view(b, length, self.n_heads, self.head_dim).transpose(1, 2)
                     for t in self.qkv(x).split(self.d_model, dim=-1))

    def merge(self, out: torch.Tensor) -> torch.Tensor:
        b, _, length, _ = out.shape
        return self.proj(out.transpose(1, 2).reshape(b, length, self.d_model))


class SoftmaxAttention(_HeadsMixer):
    """Causal multi-head softmax attention (torch's scaled_dot_product_attention), the quadratic
    baseline; with `causal: false` bidirectional (every position reads every position: the
    denoiser of a discrete diffusion LM, lhdlm).

    Args:
        d_model: Width of the residual stream (supplied by the model).
        n_heads: Attention heads; must divide d_model.
        dropout: Dropout on the attention weights while training, in [0, 1).
        causal: Position t reads positions <= t only (true, the LM default) or all positions.
    """

    def __init__(self, d_model: PositiveInt, n_heads: PositiveInt = 4, dropout: ProperFraction = 0.0,
                 causal: bool = True) -> None:
        super().__init__(d_model, n_heads)
        self.dropout, self.causal = dropout, causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(x)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal,
                                             dropout_p=self.dropout if self.training else 0.0)
        return self.merge(out)


class LinearAttention(_HeadsMixer):
    """Causal multi-head linear attention with a feature map (module docstring); one feature map per
    layer, shared by its heads.

    Args:
        d_model: Width of the residual stream (supplied by the model).
        feature_map: The feature map node (`feature_maps` table), built with this layer's head_dim.
        n_heads: Attention heads; must divide d_model.
        qk_norm: Scale each head's q and k to unit L2 norm before the feature map, as
            PolySketchFormer does for polynomial kernels (bounds (q . k)^p by 1).
        chunk_size: Chunk length of the causal computation (`causal_linear_attention`).
        eps: Added to the normalizer.
    """

    def __init__(self, d_model: PositiveInt, feature_map: FeatureMap, n_heads: PositiveInt = 4,
                 qk_norm: bool = False, chunk_size: PositiveInt = 64, eps: PositiveFloat = 1e-6) -> None:
        super().__init__(d_model, n_heads)
        if not callable(feature_map):
            raise TypeError(f"feature_map must be a feature-map factory, got {type(feature_map).__name__}")
        self.feature_map = feature_map(head_dim=self.head_dim)
        self.qk_norm, self.chunk_size, self.eps = qk_norm, chunk_size, eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(x)
        if self.qk_norm:
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        out = causal_linear_attention(self.feature_map(q), self.feature_map(k), v, self.chunk_size, self.eps)
        return self.merge(out)
