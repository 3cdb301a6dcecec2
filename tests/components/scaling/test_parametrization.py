"""components/scaling/parametrization.py: the sp and mup rules on the hybrid causal LM."""

from __future__ import annotations

import functools

import pytest
import torch

from components.scaling.parametrization import MuP, StandardParametrization
from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM
from components.sequence.ssm import SSDMixer
from components.tasks.supervised import scaled_groups


def hybrid(width: int, parametrization: object = None, seed: int = 0) -> CausalLM:
    """The 'MA' hybrid of specs/hybrid_mup at `width` (head widths fixed)."""
    torch.manual_seed(seed)
    mixers = [functools.partial(SSDMixer, d_state=4, head_dim=8), functools.partial(SoftmaxAttention, n_heads=width // 8)]
    return CausalLM(vocab_size=13, mixers=mixers, d_model=width, n_layers=2, max_len=8, mlp_ratio=2,
                    parametrization=parametrization)


HIDDEN = {"blocks.0.mixer.in_proj.weight", "blocks.0.mixer.proj.weight", "blocks.1.mixer.qkv.weight",
          "blocks.1.mixer.proj.weight", "blocks.0.mlp.0.weight", "blocks.0.mlp.2.weight", "blocks.1.mlp.0.weight",
          "blocks.1.mlp.2.weight"}


def test_roles_sort_matrices_from_vectors() -> None:
    roles = MuP(base_width=16).roles(hybrid(16))
    assert {name for name, role in roles.items() if role == "hidden"} == HIDDEN
    for vector in ("embed.weight", "position.weight", "blocks.0.mixer.a_log", "blocks.0.mixer.dt_bias",
                   "blocks.0.mixer.skip", "blocks.0.mixer.conv.weight", "blocks.0.mixer.norm.weight", "ln_final.bias"):
        assert roles[vector] == "vector"


@pytest.mark.parametrize("width", [32, 64, 128])
def test_mup_readout_lr_stays_constant(width: int) -> None:
    """NOTES.md's pitfall: with the 1/m logit multiplier the readout (the tied embedding) keeps its LR;
    only hidden matrices learn at lr / m."""
    model = hybrid(width, MuP(base_width=16))
    ratio = width / 16
    assert model.output_multiplier == 1 / ratio
    groups = {g["name"]: g for g in model.parameter_groups()}
    readout = groups["mup.vector"]
    assert readout["lr_scale"] == 1.0 and any(p is model.embed.weight for p in readout["params"])
    assert groups["mup.hidden"]["lr_scale"] == 1 / ratio
    assert len(groups["mup.hidden"]["params"]) == len(HIDDEN)


def test_every_parameter_in_exactly_one_group_and_lrs_scaled() -> None:
    model = hybrid(64, MuP(base_width=16))
    groups = scaled_groups(model.parameter_groups(), functools.partial(torch.optim.AdamW, lr=0.01))
    ids = [id(p) for g in groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(ids) == len(set(ids))
    assert {g["name"]: g["lr"] for g in groups} == {"mup.vector": 0.01, "mup.hidden": 0.0025}


def test_mup_init_is_sp_init_times_the_hidden_multiplier() -> None:
    sp, mup = hybrid(64, StandardParametrization()), hybrid(64, MuP(base_width=16))
    mup_params = dict(mup.named_parameters())
    for name, param in sp.named_parameters():
        expected = param * 0.5 if name in HIDDEN else param   # m = 4: std x m^-1/2
        assert torch.equal(mup_params[name], expected), name


def test_mup_at_its_base_width_is_sp() -> None:
    sp, mup = hybrid(32, StandardParametrization()), hybrid(32, MuP(base_width=32))
    x = torch.randint(0, 13, (2, 8))
    assert torch.equal(sp(x), mup(x))
    assert [g["lr_scale"] for g in sp.parameter_groups()] == [g["lr_scale"] for g in mup.parameter_groups()] == [1.0, 1.0]


def logit_change(width: int, parametrization: object, lr: float = 0.01) -> float:
    """RMS change of the logits after one Adam step (a one-step coordinate check)."""
    model = hybrid(width, parametrization)
    x = torch.randint(0, 13, (4, 8), generator=torch.Generator().manual_seed(1))
    optimizer = torch.optim.Adam(scaled_groups(model.parameter_groups(), functools.partial(torch.optim.Adam, lr=lr)))
    before = model(x).detach()
    torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.roll(-1, 1).flatten()).backward()
    optimizer.step()
    return float((model(x).detach() - before).pow(2).mean().sqrt())


def test_one_step_logit_change_is_width_independent_only_under_mup() -> None:
    sp = logit_change(256, StandardParametrization()) / logit_change(32, StandardParametrization())
    mup = logit_change(256, MuP(base_width=32)) / logit_change(32, MuP(base_width=32))
    assert sp > 4.0           # Adam moves every readout entry by ~lr: the change grows ~ width
    assert 0.5 < mup < 2.0    # 8x wider, about the same change
