"""components/scaling/derive.py: the linear system recovers muP's table; refusals name their cause."""

from __future__ import annotations

import functools
from fractions import Fraction

import pytest
import torch
from torch import nn

import registry
from components.models.mixer import MLPMixer
from components.models.mlp import MLP
from components.scaling.derive import derive_width
from components.scaling.trace import Use, WidthTrace, compare_widths


def lm(d_model: int, mixer: str = "softmax_attention", **mixer_args) -> nn.Module:
    factory = functools.partial(registry.KINDS["sequence_mixers"].load(mixer), n_heads=d_model // 16, **mixer_args)
    return registry.KINDS["models"].load("causal_lm")(vocab_size=16, mixer=factory, d_model=d_model, max_len=8,
                                                     short_conv=3)


def test_mlp_under_adam_is_tensor_programs_v_table_3() -> None:
    torch.manual_seed(0)
    derived = derive_width(compare_widths(MLP(8, 3, (256, 256)), MLP(8, 3, (16, 16)), torch.randn(2, 8)))
    table = {"net.0.weight": (0, 0), "net.0.bias": (0, 0),          # input weights and biases: Theta(1)
             "net.2.weight": (Fraction(1, 2), 1), "net.2.bias": (0, 0),   # hidden: std n^-1/2, LR 1/n
             "net.4.weight": (1, 1), "net.4.bias": (0, 0)}            # readout: std 1/n, LR 1/n
    assert {n: (e.init, e.lr) for n, e in derived.params.items()} == table
    assert derived.multipliers == {}


def test_tied_transformer_gets_mups_shared_readout_multiplier() -> None:
    torch.manual_seed(0)
    trace = compare_widths(lm(128), lm(32), torch.randint(0, 16, (2, 8)))
    derived = derive_width(trace)
    assert (derived.params["embed.weight"].init, derived.params["embed.weight"].lr) == (0, 0)
    for name in ("blocks.0.mixer.qkv.weight", "blocks.1.mixer.proj.weight", "blocks.0.mlp.0.weight", "blocks.1.mlp.2.weight"):
        assert (derived.params[name].init, derived.params[name].lr) == (Fraction(1, 2), 1), name
    [(index, exponent)] = derived.multipliers.items()
    assert trace.uses[index].param == "embed.weight" and trace.uses[index].at_output and exponent == 1


def test_linear_attention_feature_map_and_mixer_token_mlps_stay_at_theta_one() -> None:
    """Outside the table: tensors whose contracted dims do not grow keep init and LR."""
    feature_map = functools.partial(registry.KINDS["feature_maps"].load("llops_learned"), degree=2, rank=2)
    torch.manual_seed(0)
    derived = derive_width(compare_widths(lm(64, "linear_attention", feature_map=feature_map, qk_norm=True),
                                          lm(32, "linear_attention", feature_map=feature_map, qk_norm=True),
                                          torch.randint(0, 16, (2, 8))))
    e = derived.params["blocks.0.mixer.feature_map.projections"]
    assert (e.init, e.lr, e.fan_in) == (0, 0, 0)
    mixer = derive_width(compare_widths(MLPMixer(64, 10, patch_size=4, width=64), MLPMixer(64, 10, patch_size=4, width=16),
                                        torch.randn(2, 64)))
    assert (mixer.params["layers.0.token_mlp.0.weight"].lr, mixer.params["layers.0.channel_mlp.0.weight"].lr) == (0, 1)
    assert mixer.params["head.weight"].init == 1


def trace_of(uses: list[Use], dims: dict[str, tuple[Fraction, ...]]) -> WidthTrace:
    return WidthTrace(4.0, dims, {n: None for n in dims}, uses)


def test_unsupported_and_unused_parameters_are_refused_by_name() -> None:
    one = {"w": (Fraction(1), Fraction(1))}
    with pytest.raises(ValueError, match=r"no scaling rule for these parameter uses: w \(cumsum\)"):
        derive_width(trace_of([Use("w", "unsupported:cumsum", (), (), 0, False)], one))
    with pytest.raises(ValueError, match="never uses .no constraint.: w"):
        derive_width(trace_of([], one))


def test_contradicting_constraints_are_an_error_not_a_guess() -> None:
    """A tensor used twice as a readout with different fan-ins: its first use fixes init and LR
    without a multiplier, the second needs a_u + c = 2 and a_u + b = 2 with b != c: no solution."""
    uses = [Use("w", "matmul", (1,), (), 0, True), Use("w", "matmul", (0, 1), (), 1, True)]
    with pytest.raises(ValueError, match="contradict"):
        derive_width(trace_of(uses, {"w": (Fraction(1), Fraction(1))}))
