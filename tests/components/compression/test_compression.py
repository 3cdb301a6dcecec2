"""components/compression (scalebits): group quantization with a bit width per tile, the tiles and
their channel reordering, calibration gradient and Fisher, and the greedy allocations."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from components.compression.allocation import MixedPrecisionPTQ
from components.compression.blocks import block_layout
from components.compression.sensitivity import gradient_and_fisher, mean_loss
from components.models.mlp import MLP
from components.models.precision import UniformBits, quantize_uniform


def test_the_per_tensor_symmetric_rule_of_lpr_is_unchanged() -> None:
    """precision_reduced's bits (lpr_anomaly) go through quantize_uniform: bit-identical to the
    rule it had, round(w / s) * s with s = max|w| / (2^(b-1) - 1)."""
    torch.manual_seed(0)
    for shape in [(5,), (7, 3), (4, 6, 8)]:
        w = torch.randn(*shape)
        for bits in (2, 3, 4, 8):
            scale = w.abs().max() / (2 ** (bits - 1) - 1)
            assert torch.equal(UniformBits(bits)(w), torch.round(w / scale) * scale)


def test_asymmetric_groups_with_a_hand_computed_case() -> None:
    w = torch.tensor([[0.0, 0.2, 0.5, 0.9, -1.0, -1.0, -1.0, -1.0]])
    q = quantize_uniform(w, torch.tensor([[2, 3]]), symmetric=False, group_size=4)
    # group 1: s = 0.9 / 3 = 0.3, zero point 0: levels 0, 0.3, 0.6, 0.9
    assert torch.allclose(q[0, :4], torch.tensor([0.0, 0.3, 0.6, 0.9]))
    # group 2: all equal, scale 0: returned as is
    assert torch.equal(q[0, 4:], w[0, 4:])
    # 1 bit with a zero point: two levels per group
    one = quantize_uniform(torch.randn(3, 8), 1, symmetric=False, group_size=8)
    assert all(len(torch.unique(row)) <= 2 for row in one)
    with pytest.raises(ValueError, match="bits must be >= 2"):
        quantize_uniform(w, 1)
    with pytest.raises(ValueError, match="one width per group"):
        quantize_uniform(w, torch.tensor([2, 3, 4]), group_size=4)


def test_fewer_bits_never_have_more_levels_and_more_bits_err_less() -> None:
    torch.manual_seed(1)
    w = torch.randn(16, 64)
    errors = []
    for bits in (2, 3, 4, 8):
        q = quantize_uniform(w, bits, symmetric=False, group_size=16)
        groups = q.reshape(16, 4, 16)
        assert max(len(torch.unique(g)) for row in groups for g in row) <= 2**bits
        errors.append(float((q - w).square().mean()))
    assert errors == sorted(errors, reverse=True)


def test_tiles_cover_the_matrix_and_reordering_gathers_planted_sensitivity() -> None:
    torch.manual_seed(2)
    sens = torch.rand(32, 48) * 0.01
    rows, cols = torch.tensor([3, 17, 30, 9]), torch.tensor([5, 40, 22, 11])
    sens[rows.unsqueeze(1), cols.unsqueeze(0)] += 1.0   # 4 x 4 sensitive weights, scattered
    plain, ordered = block_layout((32, 48), (4, 4)), block_layout((32, 48), (4, 4), sens)
    assert plain.grid == ordered.grid == (8, 12)
    x = torch.randn(32, 48)
    assert torch.equal(ordered.unpermute(ordered.permute(x)), x)
    assert torch.allclose(ordered.tile_sums(sens).sum(), sens.sum().to(ordered.tile_sums(sens).dtype))
    # reordered, one tile holds the planted block; contiguous, it is spread over 16 tiles
    assert float(ordered.tile_sums(sens).max()) > 16.0
    assert float(plain.tile_sums(sens).max()) < 2.0
    with pytest.raises(ValueError, match="does not tile"):
        block_layout((30, 48), (4, 4))


def test_a_tile_at_b_bits_has_at_most_2_to_the_b_levels_per_row() -> None:
    torch.manual_seed(3)
    w = torch.randn(8, 8)
    lay = block_layout((8, 8), (4, 4), torch.rand(8, 8))
    bits = torch.tensor([[1, 2], [3, 2]])
    q = lay.permute(lay.quantize(w, bits, symmetric=False))
    for r in range(2):
        for c in range(2):
            tile = q[4 * r:4 * r + 4, 4 * c:4 * c + 4]
            assert all(len(torch.unique(row)) <= 2 ** int(bits[r, c]) for row in tile)


def test_gradient_is_the_mean_loss_gradient_and_fisher_the_micro_batch_estimate() -> None:
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(5, 3))
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    weight = model[0].weight
    grads, fisher, loss = gradient_and_fisher(model, [weight], x, y, micro_batch=2)
    ref = nn.functional.cross_entropy(model(x), y)
    assert loss == pytest.approx(float(ref), rel=1e-6)
    assert torch.allclose(grads[0], torch.autograd.grad(ref, weight)[0], atol=1e-6)
    parts = [torch.autograd.grad(nn.functional.cross_entropy(model(x[i:i + 2]), y[i:i + 2]), weight)[0]
             for i in range(0, 6, 2)]
    assert torch.allclose(fisher[0], sum(2 * p.square() for p in parts) / 3, atol=1e-6)
    assert mean_loss(model, x, y, batch_size=4) == pytest.approx(float(ref), rel=1e-6)


def _splits(seed: int = 0) -> tuple[nn.Module, dict]:
    torch.manual_seed(seed)
    model = MLP(16, 8, hidden=[32])
    x = torch.randn(256, 16)
    y = (x[:, :8].argmax(dim=1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[:192]), y[:192]).backward()
        opt.step()
    return model, {"train": {"x": x[:192], "y": y[:192]}, "test": {"x": x[192:], "y": y[192:]}}


@pytest.mark.parametrize("method", ["uniform", "static", "dynamic", "random"])
def test_every_method_meets_the_budget_and_leaves_the_model_alone(method: str) -> None:
    model, splits = _splits()
    before = copy.deepcopy(model.state_dict())
    out = MixedPrecisionPTQ(method=method, avg_bits=3.0, block=[8, 8], calibration_size=64,
                            moves_per_estimate=2)(model, splits)
    assert out["avg_bits"] == 3.0
    assert sum(out[f"share_{b}bit"] for b in (2, 3, 4)) == pytest.approx(1.0)
    assert out["prior_loss"] > out["fp_loss"] and out["excess_loss"] == out["loss"] - out["fp_loss"]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    if method == "uniform":
        assert out["share_3bit"] == 1.0 and out["estimates"] == 0
    else:  # 12 tiles (32x16 and 8x32 weights in 8x8 tiles), 12 one-bit moves, 2 per estimate
        assert out["estimates"] == 6


def test_full_precision_is_the_reference_and_dynamic_differs_from_static() -> None:
    model, splits = _splits()
    fp = MixedPrecisionPTQ(method="full_precision", block=[8, 8])(model, splits)
    assert fp["loss"] == fp["fp_loss"] and fp["avg_bits"] == 32.0
    kw = dict(avg_bits=2.5, block=[8, 8], moves_per_estimate=1)
    static = MixedPrecisionPTQ(method="static", **kw)(model, splits)
    dynamic = MixedPrecisionPTQ(method="dynamic", **kw)(model, splits)
    rand = MixedPrecisionPTQ(method="random", **kw)(model, splits)
    assert static["avg_bits"] == dynamic["avg_bits"] == rand["avg_bits"] == 2.5
    assert len({static["loss"], dynamic["loss"], rand["loss"]}) == 3


def test_arguments_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValueError, match="uniform needs avg_bits"):
        MixedPrecisionPTQ(method="uniform", avg_bits=2.5)
    with pytest.raises(ValueError, match="outside the widths"):
        MixedPrecisionPTQ(avg_bits=5.0)
    model, splits = _splits()
    with pytest.raises(ValueError, match="does not tile"):
        MixedPrecisionPTQ(block=[16, 16])(model, splits)   # the 8-row output layer
    with pytest.raises(ValueError, match="keep_full_precision names"):
        MixedPrecisionPTQ(keep_full_precision=["head"], block=[8, 8])(model, splits)
