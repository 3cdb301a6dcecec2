"""components/scaling/autop.py and known.py: the wrapper applies the derived exponents; the muP
table check and lr_shift; the MLP-Mixer it is tested on."""

from __future__ import annotations

import functools

import math

import pytest
import torch

from components.models.mixer import MLPMixer
from components.models.mlp import MLP
from framework.claims.evidence import Interval, Undecided
from components.scaling.autop import AutoParametrized
from components.scaling.known import ExponentCheck, lr_shift
from components.tasks.supervised import scaled_groups


def mlp(width: int) -> MLP:
    return MLP(8, 3, (width, width))


def test_at_the_base_width_derived_is_standard_exactly() -> None:
    torch.manual_seed(0)
    derived = AutoParametrized(mlp(16), mlp(16), (2, 8))
    torch.manual_seed(0)
    standard = AutoParametrized(mlp(16), mlp(16), (2, 8), rule="standard")
    x = torch.randn(5, 8)
    assert torch.equal(derived(x), standard(x))
    assert [g["lr_scale"] for g in derived.parameter_groups()] == [1.0]


def test_wide_model_gets_the_derived_init_lr_and_weight_decay() -> None:
    torch.manual_seed(0)
    model, base = mlp(1024), mlp(16)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    wrapped = AutoParametrized(model, base, (2, 8))
    m = 64.0
    params = dict(model.named_parameters())
    # hidden: PyTorch's std ~ m^-1/2 is already muP's: unchanged; readout: std m^-1/2 -> m^-1; biases m^-1/2 -> 1
    assert torch.equal(params["net.2.weight"], before["net.2.weight"])
    assert torch.allclose(params["net.4.weight"], before["net.4.weight"] * m ** -0.5)
    assert torch.allclose(params["net.2.bias"], before["net.2.bias"] * m ** 0.5)
    groups = {g["name"]: g for g in wrapped.parameter_groups()}
    assert groups["lr*m^-1"]["lr_scale"] == 1 / m and groups["lr*m^-1"]["weight_decay_scale"] == m
    assert {id(p) for p in groups["lr*m^-1"]["params"]} == {id(params["net.2.weight"]), id(params["net.4.weight"])}
    torch_groups = scaled_groups(wrapped.parameter_groups(), functools.partial(torch.optim.AdamW, lr=0.1, weight_decay=0.01))
    optimizer = torch.optim.AdamW(torch_groups, lr=0.1)
    lrs = sorted((g["lr"], g["weight_decay"]) for g in optimizer.param_groups)
    assert lrs == [(0.1 / m, 0.01 * m), (0.1, 0.01)]


def test_standard_rule_changes_nothing_and_the_table_check_tells_them_apart() -> None:
    torch.manual_seed(0)
    model = mlp(256)
    before = [p.detach().clone() for p in model.parameters()]
    standard = AutoParametrized(model, mlp(16), (2, 8), rule="standard")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    check = ExponentCheck(readout=("net.4.weight",))
    assert check(standard, {})["exponent_error"] == 1.0      # hidden LR: 0 instead of muP's 1
    torch.manual_seed(0)
    derived = AutoParametrized(mlp(256), mlp(16), (2, 8))
    assert check(derived, {}) == {"exponent_error": 0.0, "parameters": 6.0, "hidden_lr_exponent": 1.0}
    with pytest.raises(ValueError, match="readout names no parameter"):
        ExponentCheck(readout=("head.weight",))(derived, {})


def test_lr_shift_counts_grid_steps_between_the_best_rates() -> None:
    lrs = [1e-3, 4e-3, 1.6e-2, 6.4e-2]
    assert lr_shift([3.0, 1.0, 2.0, 3.0], lrs, [3.0, 2.0, 1.0, 3.0], lrs, 4) == pytest.approx(1.0)
    assert lr_shift([3.0, 1.0, 2.0, 3.0], lrs, [3.0, 1.0, 2.0, 3.0], lrs, 4) == 0.0
    # a best rate at the grid's edge: the optimum may lie beyond it, so the shift is a range
    edge = lr_shift([3.0, 1.0, 2.0, 3.0], lrs, [3.0, 2.0, 1.5, 1.0], lrs, 4)
    assert isinstance(edge, Interval) and (edge.low, edge.high) == (pytest.approx(2.0), math.inf)
    assert "best at the grid's last point 0.064" in repr(edge)
    assert (edge <= 1) is False and isinstance(edge <= 3, Undecided)
    with pytest.raises(ValueError, match="step must be > 1"):
        lr_shift([1.0], [1e-3], [1.0], [1e-3], 1)


def test_mixer_patches_are_row_major_and_bad_shapes_are_refused() -> None:
    mixer = MLPMixer(16, 2, patch_size=2, width=4)
    image = torch.arange(16.0).reshape(1, 16)
    assert mixer.patches(image)[0, 1].tolist() == [2.0, 3.0, 6.0, 7.0]   # second patch: top row, columns 2-3
    assert mixer(torch.randn(3, 16)).shape == (3, 2)
    with pytest.raises(ValueError, match="square number of pixels"):
        MLPMixer(15, 2)
    with pytest.raises(ValueError, match="patch_size must divide the image side 4"):
        MLPMixer(16, 2, patch_size=3)


def test_mixer_upsample_repeats_pixels_into_more_patches() -> None:
    image = torch.arange(16.0).reshape(1, 16)   # 4 x 4
    mixer = MLPMixer(16, 2, patch_size=2, width=4, upsample=2)   # 8 x 8 -> 16 patches of 2 x 2
    patches = mixer.patches(image)
    assert patches.shape == (1, 16, 4)
    assert patches[0, 0].tolist() == [0.0] * 4 and patches[0, 1].tolist() == [1.0] * 4   # one pixel, repeated 2 x 2
    assert patches[0, 4].tolist() == [4.0] * 4                                            # second pixel row
    assert mixer(torch.randn(3, 16)).shape == (3, 2)
    assert torch.equal(MLPMixer(16, 2, patch_size=2, width=4, upsample=1).patches(image),
                       MLPMixer(16, 2, patch_size=2, width=4).patches(image))
    with pytest.raises(ValueError, match="patch_size must divide the image side 4 x upsample 2"):
        MLPMixer(16, 2, patch_size=3, upsample=2)


def test_context_length_rule_scales_only_the_token_mlp_that_contracts_the_patches() -> None:
    """Traced against the same Mixer with 16x fewer patches (context, not width, grows): the
    token-mixing MLP's first weight contracts the patch axis into a hidden size that does not
    grow, so it gets a readout's exponents (init std and LR ~ 1/T); every other tensor keeps its
    init and LR (its bias, whose PyTorch init follows 1/sqrt(T), goes back to the base init)."""
    torch.manual_seed(0)
    model = MLPMixer(64, 10, patch_size=4, width=16, depth=1, token_hidden=8, upsample=4)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    wrapped = AutoParametrized(model, MLPMixer(64, 10, patch_size=4, width=16, depth=1, token_hidden=8), (2, 64))
    assert wrapped.multiplier == 16.0
    scaled = {n: (e.init, e.lr) for n, e in wrapped.exponents.items() if (e.init, e.lr) != (0, 0)}
    assert scaled == {"layers.0.token_mlp.0.weight": (1, 1)}
    params = dict(model.named_parameters())
    assert torch.allclose(params["layers.0.token_mlp.0.weight"], before["layers.0.token_mlp.0.weight"] / 4)
    assert torch.allclose(params["layers.0.token_mlp.0.bias"], before["layers.0.token_mlp.0.bias"] * 4)
    assert torch.equal(params["layers.0.channel_mlp.0.weight"], before["layers.0.channel_mlp.0.weight"])
    assert wrapped.output_scale == 1.0
    groups = {g["name"]: len(g["params"]) for g in wrapped.parameter_groups()}
    assert groups == {"lr*m^-0": len(params) - 1, "lr*m^-1": 1}
