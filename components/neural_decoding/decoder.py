"""`behavior_decoder`: a causal transformer over behaviour trajectories that reads neural activity
through cross-attention when a batch has it (beemo, rebuilt from its abstract).

Input: the behaviour stream x (B, T, c) (the task feeds the previous step's velocity, so position t
predicts step t from steps < t) -> a linear embedding plus a learned position embedding. Each of
`layers` blocks: the causal self-attention `mixer` (a `sequence_mixers` factory, softmax attention
by default, components/sequence/attention.py) and a feed-forward layer (pre-norm, residual), then,
only when neural tokens are given, a `CrossAttentionLayer` (components/sequence/cross_attention.py)
in which every behaviour position reads the trial's neural tokens. Without neural input the
cross-attention layers are skipped: the same weights are a behaviour-only model, which is how
unpaired batches train the dynamics and paired batches add the neural read-out.

Neural tokens: one per time bin, sum_u sqrt(count_u) e_{s,u} (+ a bin embedding), with e_{s,u}
a learned embedding per unit of each session s (`sessions` x `max_units`; units a session lacks
have zero counts), then a feed-forward layer: sessions with different units map into one space.
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
from torch import nn

from components.kinds import Kind
from components.sequence.attention import SoftmaxAttention
from components.sequence.cross_attention import CrossAttentionLayer
from components.types import PositiveInt

SequenceMixer = Annotated[Any, Kind("sequence_mixers")]


class _Block(nn.Module):
    def __init__(self, d_model: int, mixer: Any, n_heads: int) -> None:
        super().__init__()
        self.norm_mix, self.norm_ff = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mixer = mixer(d_model=d_model) if mixer is not None else SoftmaxAttention(d_model, n_heads)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.cross = CrossAttentionLayer(d_model, n_heads)

    def forward(self, h: torch.Tensor, neural: torch.Tensor | None) -> torch.Tensor:
        h = h + self.mixer(self.norm_mix(h))
        h = h + self.ff(self.norm_ff(h))
        return h if neural is None else self.cross(h, neural)


class BehaviorDecoder(nn.Module):
    """Causal behaviour transformer with optional neural cross-attention (module docstring).

    Args:
        channels: Behaviour dimensions c (2 for planar velocity).
        sessions: Sessions with unit embeddings.
        max_units: Units per session's embedding table (>= the largest session).
        max_steps: Longest trial (position embeddings).
        d_model: Width.
        layers: Blocks.
        n_heads: Heads of the cross-attention (and of the default self-attention).
        mixer: The self-attention factory (`sequence_mixers`, causal); null: softmax attention.
    """

    def __init__(self, channels: PositiveInt = 2, sessions: PositiveInt = 3, max_units: PositiveInt = 64,
                 max_steps: PositiveInt = 64, d_model: PositiveInt = 32, layers: PositiveInt = 2,
                 n_heads: PositiveInt = 4, mixer: SequenceMixer | None = None) -> None:
        super().__init__()
        self.channels, self.sessions, self.max_units, self.max_steps = channels, sessions, max_units, max_steps
        self.embed = nn.Linear(channels, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(max_steps, d_model))
        self.units = nn.Parameter(torch.randn(sessions, max_units, d_model) / max_units ** 0.5)
        self.bins = nn.Parameter(0.02 * torch.randn(max_steps, d_model))
        self.neural_ff = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, 2 * d_model), nn.GELU(),
                                       nn.Linear(2 * d_model, d_model))
        self.blocks = nn.ModuleList(_Block(d_model, mixer, n_heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, channels)

    def neural_tokens(self, spikes: torch.Tensor, session: torch.Tensor) -> torch.Tensor:
        """(B, T, units) counts and (B,) session ids -> (B, T, d_model) tokens."""
        table = self.units[session][:, : spikes.shape[-1]]  # (B, units, d)
        tokens = torch.einsum("btu,bud->btd", spikes.float().sqrt(), table) + self.bins[: spikes.shape[1]]
        return tokens + self.neural_ff(tokens)

    def forward(self, behavior: torch.Tensor, spikes: torch.Tensor | None = None,
                session: torch.Tensor | None = None) -> torch.Tensor:
        """behavior (B, T, c) -> predictions (B, T, c); neural input only when spikes are given."""
        length = behavior.shape[1]
        if length > self.max_steps:
            raise ValueError(f"trials of {length} steps exceed max_steps={self.max_steps}")
        neural = None if spikes is None else self.neural_tokens(spikes, session)
        h = self.embed(behavior) + self.position[:length]
        for block in self.blocks:
            h = block(h, neural)
        return self.head(self.norm(h))
