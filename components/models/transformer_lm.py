"""A small causal (GPT-style) transformer language model with a named residual stream.

Pre-LayerNorm blocks, learned absolute positions, tied input/output embeddings. The residual stream
after block i is the output of the submodule `blocks.<i>` (shape (B, L, d_model)), so a forward
hook on that name reads it (`sae_training`'s `site`); `residual(x, layer)` returns it directly.

Stage one of `sae_replay` (specs/sae_replay/): a tiny character LM whose residual activations
stand in for Llama-3.1 / Qwen3's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from components.types import PositiveInt, ProperFraction


class Block(nn.Module):
    """x + attn(ln(x)), then + mlp(ln(x)); returns the residual stream after the block."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int, dropout: float) -> None:
        super().__init__()
        self.n_heads, self.dropout = n_heads, dropout
        self.ln_attn, self.ln_mlp = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_model, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        q, k, v = self.qkv(self.ln_attn(x)).split(d, dim=-1)
        q, k, v = (t.view(b, length, self.n_heads, d // self.n_heads).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                              dropout_p=self.dropout if self.training else 0.0)
        x = x + self.drop(self.proj(attn.transpose(1, 2).reshape(b, length, d)))
        return x + self.drop(self.mlp(self.ln_mlp(x)))


class TransformerLM(nn.Module):
    """Causal transformer LM: token ids (B, L) -> next-token logits (B, L, vocab_size).

    Args:
        vocab_size: Number of token ids (the data's vocabulary).
        d_model: Width of the residual stream.
        n_layers: Number of blocks.
        n_heads: Attention heads per block; must divide d_model.
        max_len: Longest sequence the position table covers.
        mlp_ratio: MLP hidden width as a multiple of d_model.
        dropout: Dropout on attention weights and block outputs, in [0, 1).
    """

    def __init__(
        self,
        vocab_size: PositiveInt,
        d_model: PositiveInt = 64,
        n_layers: PositiveInt = 2,
        n_heads: PositiveInt = 4,
        max_len: PositiveInt = 128,
        mlp_ratio: PositiveInt = 4,
        dropout: ProperFraction = 0.0,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={d_model}, n_heads={n_heads}")
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, mlp_ratio, dropout) for _ in range(n_layers))
        self.ln_final = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.apply(self._init)
        for block in self.blocks:  # GPT-2: residual projections scaled by 1/sqrt(2 n_layers)
            for linear in (block.proj, block.mlp[2]):
                nn.init.normal_(linear.weight, std=0.02 / math.sqrt(2 * n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def _stream(self, x: torch.Tensor, layers: int) -> torch.Tensor:
        if x.ndim != 2:
            raise ValueError(f"transformer_lm takes token ids of shape (B, L), got {tuple(x.shape)}")
        if x.shape[1] > self.max_len:
            raise ValueError(f"sequence length {x.shape[1]} exceeds max_len = {self.max_len}")
        h = self.drop(self.embed(x) + self.position(torch.arange(x.shape[1], device=x.device)))
        for block in self.blocks[:layers]:
            h = block(h)
        return h

    def residual(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """The residual stream after block `layer` (0-based): (B, L, d_model)."""
        if not 0 <= layer < len(self.blocks):
            raise ValueError(f"layer must be in [0, {len(self.blocks) - 1}], got {layer}")
        return self._stream(x, layer + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln_final(self._stream(x, len(self.blocks)))
        return h @ self.embed.weight.T
