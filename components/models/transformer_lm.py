"""A small causal (GPT-style) transformer language model with a named residual stream.

`causal_lm` (components/sequence/lm.py) with softmax attention in every block: pre-LayerNorm
blocks, learned absolute positions, tied input/output embeddings. The residual stream after block i
is the output of the submodule `blocks.<i>` (shape (B, L, d_model)), so a forward hook on that
name reads it (`sae_training`'s `site`); `residual(x, layer)` returns it directly and
`hidden_states(x)` returns all of them.

Stage one of `sae_replay` (specs/sae_replay/): a tiny character LM whose residual activations
stand in for Llama-3.1 / Qwen3's.
"""

from __future__ import annotations

from functools import partial

from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM
from components.types import PositiveInt, ProperFraction


class TransformerLM(CausalLM):
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
        if d_model % n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={d_model}, n_heads={n_heads}")
        super().__init__(vocab_size, partial(SoftmaxAttention, n_heads=n_heads, dropout=dropout), d_model=d_model,
                         n_layers=n_layers, max_len=max_len, mlp_ratio=mlp_ratio, dropout=dropout)
