"""A small causal LM whose blocks take their sequence mixer by name from the spec.

Pre-LayerNorm blocks x + mixer(ln(x)), then + mlp(ln(x)); learned absolute positions; tied input and
output embeddings; GPT-2 initialisation. The mixer node (`sequence_mixers`
table: `softmax_attention`, `linear_attention` with a feature map, ...) is a factory called once per
layer with d_model, so each layer has its own weights. Used by llops (specs/llops/) and meant for
the LM papers that follow (a new mixer is a new table entry, not a new model); `transformer_lm`
is this model with softmax attention.

Hybrids: `mixers` (a list of mixer nodes) in place of `mixer` gives layer i the mixer
mixers[i % len(mixers)], e.g. [ssd, softmax_attention] for the alternating Mamba / attention
pattern "MAMA..." of hybrid_mup (specs/hybrid_mup/). A `parametrization` (`parametrizations`
table: `sp`, `mup`; components/scaling/parametrization.py) rescales the init, multiplies the logits
and gives `parameter_groups()` per-group learning-rate scales; without one the model has no
`parameter_groups` and trains with one learning rate, as before.

Internals: `hidden_states(x)` returns the residual stream after the embedding and after every block
(the outputs of the submodules `blocks.<i>`, which forward hooks read), `residual(x, layer)` one of
them, and `logits(h)` reads next-token logits off any of them (a logit lens).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import torch
from torch import nn

from components.kinds import Kind
from components.types import NonNegativeInt, PositiveInt, ProperFraction

SequenceMixer = Annotated[Any, Kind("sequence_mixers")]
Parametrization = Annotated[Any, Kind("parametrizations")]


class ShortConv(nn.Module):
    """Depthwise causal convolution over positions, (B, L, d) -> (B, L, d): position t mixes
    positions t - width + 1 .. t, one filter per channel (the short convolution of H3, Based and
    Mamba before their sequence mixers). Initialised as the identity (the last tap 1)."""

    def __init__(self, d_model: int, width: int) -> None:
        super().__init__()
        self.width = width
        self.conv = nn.Conv1d(d_model, d_model, width, groups=d_model, padding=width - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)


class MixerBlock(nn.Module):
    """x + mixer(conv(ln(x))), then + mlp(ln(x)); the residual stream after the block. conv is a
    `ShortConv` when short_conv > 0, else the identity."""

    def __init__(self, mixer: nn.Module, d_model: int, mlp_ratio: int, dropout: float, short_conv: int = 0) -> None:
        super().__init__()
        self.mixer = mixer
        self.conv = ShortConv(d_model, short_conv) if short_conv else nn.Identity()
        self.ln_mix, self.ln_mlp = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_model, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.mixer(self.conv(self.ln_mix(x))))
        return x + self.drop(self.mlp(self.ln_mlp(x)))


class CausalLM(nn.Module):
    """Causal LM with pluggable mixers: token ids (B, L) -> next-token logits (B, L, vocab_size).

    Args:
        vocab_size: Number of token ids (the data's vocabulary).
        mixer: The sequence mixer node, built once per layer with d_model.
        mixers: Instead of `mixer`, a list of mixer nodes cycled over the layers (layer i builds
            mixers[i % len(mixers)]): a hybrid.
        d_model: Width of the residual stream.
        n_layers: Number of blocks.
        max_len: Longest sequence the position table covers.
        mlp_ratio: MLP hidden width as a multiple of d_model.
        dropout: Dropout on the embeddings and block outputs, in [0, 1).
        short_conv: Width of a depthwise causal convolution before each mixer (`ShortConv`, as in
            H3, Based and Mamba); 0 for none.
        parametrization: A width parametrization node (module docstring), or None for the plain
            model with one learning rate.
    """

    def __init__(
        self,
        vocab_size: PositiveInt,
        mixer: SequenceMixer | None = None,
        d_model: PositiveInt = 64,
        n_layers: PositiveInt = 2,
        max_len: PositiveInt = 128,
        mlp_ratio: PositiveInt = 4,
        dropout: ProperFraction = 0.0,
        short_conv: NonNegativeInt = 0,
        mixers: list[SequenceMixer] | None = None,
        parametrization: Parametrization | None = None,
    ) -> None:
        super().__init__()
        layer_mixers = _layer_mixers(mixer, mixers, n_layers)
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self._arguments = dict(vocab_size=vocab_size, mixer=mixer, n_layers=n_layers, max_len=max_len,
                               mlp_ratio=mlp_ratio, dropout=dropout, short_conv=short_conv, mixers=mixers)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(MixerBlock(make(d_model=d_model), d_model, mlp_ratio, dropout, short_conv)
                                    for make in layer_mixers)
        self.ln_final = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)) and ".feature_map" not in name:
                nn.init.normal_(module.weight, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)
        for block in self.blocks:  # GPT-2: residual projections scaled by 1/sqrt(2 n_layers)
            for linear in (getattr(block.mixer, "proj", None), block.mlp[2]):
                if linear is not None:
                    nn.init.normal_(linear.weight, std=0.02 / math.sqrt(2 * n_layers))
            if isinstance(block.conv, ShortConv):
                nn.init.zeros_(block.conv.conv.weight)
                nn.init.zeros_(block.conv.conv.bias)
                with torch.no_grad():
                    block.conv.conv.weight[:, 0, -1] = 1.0
        self.parametrization = parametrization
        self.output_multiplier = None if parametrization is None else parametrization.apply(self)

    @property
    def parameter_groups(self) -> Any:
        """With a parametrization, the method giving its parameter groups with their `lr_scale`
        (components/tasks/supervised.py `scaled_groups`); without one None, so the task trains every
        parameter at the spec's one learning rate."""
        if self.parametrization is None:
            return None
        return lambda: self.parametrization.groups(self)

    def twin(self, d_model: int) -> CausalLM:
        """This model's architecture at width d_model, on the meta device (shapes only, no memory,
        no parametrization): what a parametrization compares shapes with."""
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            return CausalLM(d_model=d_model, **self._arguments)

    def _check(self, x: torch.Tensor) -> None:
        if x.ndim != 2:
            raise ValueError(f"causal_lm takes token ids of shape (B, L), got {tuple(x.shape)}")
        if x.shape[1] > self.max_len:
            raise ValueError(f"sequence length {x.shape[1]} exceeds max_len = {self.max_len}")

    def hidden_states(self, x: torch.Tensor, layers: int | None = None) -> list[torch.Tensor]:
        """The residual stream (B, L, d_model) after the embedding and after each of the first
        `layers` blocks (all by default): element 0 is the embedding, element i the output of
        `blocks.<i-1>`, the module a forward hook on that name reads."""
        self._check(x)
        h = self.drop(self.embed(x) + self.position(torch.arange(x.shape[1], device=x.device)))
        states = [h]
        for block in self.blocks[: len(self.blocks) if layers is None else layers]:
            states.append(h := block(h))
        return states

    def residual(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """The residual stream after block `layer` (0-based): (B, L, d_model)."""
        if not 0 <= layer < len(self.blocks):
            raise ValueError(f"layer must be in [0, {len(self.blocks) - 1}], got {layer}")
        return self.hidden_states(x, layer + 1)[-1]

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Next-token logits read from a residual stream h: (B, L, d_model) -> (B, L, vocab_size)
        (the final LayerNorm and the tied unembedding, times the parametrization's output multiplier;
        a logit lens on an intermediate layer)."""
        logits = self.ln_final(h) @ self.embed.weight.T
        return logits if self.output_multiplier is None else logits * self.output_multiplier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits(self.hidden_states(x)[-1])


def _layer_mixers(mixer: Any, mixers: list[Any] | None, n_layers: int) -> list[Any]:
    """The mixer factory of each layer: `mixer` for all, or `mixers` cycled; exactly one is given."""
    if (mixer is None) == (mixers is None):
        raise ValueError("causal_lm takes exactly one of `mixer` (every layer) and `mixers` (cycled over layers)")
    if mixers is not None and not mixers:
        raise ValueError("mixers must list at least one sequence mixer")
    for factory in [mixer] if mixers is None else mixers:
        if not callable(factory):
            raise TypeError(f"mixer must be a sequence-mixer factory, got {type(factory).__name__}")
    return [mixer] * n_layers if mixers is None else [mixers[i % len(mixers)] for i in range(n_layers)]
