"""components/models/precision.py: the per-layer precision constraint on any model (LPR)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from components.models.mlp import MLP
from components.models.precision import PrecisionReduced, UniformBits, constrainable_layers, reduce_precision


def linears(model: nn.Module) -> list[nn.Linear]:
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


def test_rounds_weights_and_biases_to_decimals_with_a_hand_computed_case() -> None:
    layer = nn.Linear(3, 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.04, 0.16, -0.26]]))
        layer.bias.copy_(torch.tensor([1.234]))
    wrapped = PrecisionReduced(nn.Sequential(layer), decimals=1)
    assert wrapped.reduced == ["0.weight", "0.bias"]
    assert torch.allclose(layer.weight, torch.tensor([[0.0, 0.2, -0.3]]))
    assert torch.allclose(layer.bias, torch.tensor([1.2]))
    # the latent full-precision values are kept and are what the state dict holds
    assert torch.allclose(layer.parametrizations.weight.original, torch.tensor([[0.04, 0.16, -0.26]]))
    assert "model.0.parametrizations.weight.original" in wrapped.state_dict()
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert wrapped(x).item() == pytest.approx(0.0 + 0.4 - 0.9 + 1.2)


def test_straight_through_gradient_reaches_the_latent_weights() -> None:
    layer = nn.Linear(4, 2)
    wrapped = PrecisionReduced(nn.Sequential(layer), decimals=0)
    x = torch.randn(5, 4)
    wrapped(x).sum().backward()
    latent = layer.parametrizations.weight.original
    # d/dW sum(W x + b) = sum over rows of x, for each output: rounding passes as the identity
    assert torch.allclose(latent.grad, x.sum(0).expand(2, 4))
    assert torch.allclose(layer.parametrizations.bias.original.grad, torch.full((2,), 5.0))


def test_bits_use_symmetric_levels_scaled_to_the_largest_entry() -> None:
    w = torch.tensor([0.9, -0.3, 0.1, 0.0, 0.45])
    q = UniformBits(3)(w)  # 3 levels: s = 0.9 / 3 = 0.3
    assert torch.allclose(q, torch.tensor([0.9, -0.3, 0.0, 0.0, 0.6]))
    assert torch.equal(UniformBits(4)(torch.zeros(3)), torch.zeros(3))
    with pytest.raises(ValueError, match="bits must be >= 2"):
        UniformBits(1)


def test_layers_by_index_leave_the_others_at_full_precision() -> None:
    torch.manual_seed(0)
    model = MLP(8, 8, hidden=[16, 4, 16])
    before = [m.weight.detach().clone() for m in linears(model)]
    wrapped = PrecisionReduced(model, decimals=1, layers=[3, 0, 0], biases=False)
    assert wrapped.reduced == ["net.0.weight", "net.6.weight"]
    after = [m.weight for m in linears(model)]
    assert torch.equal(after[1], before[1]) and torch.equal(after[2], before[2])
    assert torch.equal(after[0], torch.round(before[0], decimals=1))
    assert torch.equal(after[3], torch.round(before[3], decimals=1))
    assert not hasattr(linears(model)[0], "parametrizations") or "bias" not in linears(model)[0].parametrizations
    assert wrapped.in_features == 8 and wrapped.out_features == 8


def test_layers_are_weight_matrices_in_module_order_not_norms() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.LayerNorm(144),
                          nn.Linear(144, 10))
    assert [name for name, _ in constrainable_layers(model)] == ["0", "5"]
    wrapped = PrecisionReduced(model, bits=4)
    assert wrapped.reduced == ["0.weight", "0.bias", "5.weight", "5.bias"]
    assert wrapped(torch.randn(2, 1, 8, 8)).shape == (2, 10)
    assert len(torch.unique(model[0].weight)) <= 2 ** 4 - 1  # 7 levels, their negatives and 0


def test_eval_only_rounds_in_eval_mode_and_not_in_training() -> None:
    torch.manual_seed(1)
    model = MLP(4, 4, hidden=[8])
    wrapped = PrecisionReduced(model, decimals=1, when="eval_only")
    latent = linears(model)[0].parametrizations.weight.original
    assert torch.equal(linears(model)[0].weight, latent)
    wrapped.eval()
    assert torch.equal(linears(model)[0].weight, torch.round(latent, decimals=1))


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give exactly one of decimals and bits, got decimals=None, bits=None"),
    ({"decimals": 1, "bits": 4}, "give exactly one of decimals and bits, got decimals=1, bits=4"),
    ({"decimals": 1, "layers": [3]}, "layers [3] out of range: the model has 2 layers (0: net.0, 1: net.2)"),
    ({"decimals": 1, "when": "always"}, "when must be 'train_and_eval' or 'eval_only', got 'always'"),
], ids=["neither", "both", "out-of-range", "bad-when"])
def test_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        PrecisionReduced(MLP(4, 2, hidden=[8]), **kwargs)
    assert str(error.value) == message


def test_a_model_without_weight_matrices_is_an_error() -> None:
    with pytest.raises(ValueError, match="ReLU has no layer with a weight matrix"):
        reduce_precision(nn.ReLU(), decimals=1)


def test_spec_ranges_are_checked_without_torch(argument_problems) -> None:
    problems = argument_problems("models", "precision_reduced", decimals=-1, bits=1)
    assert problems == {"decimals": "must be >= 0, got integer -1", "bits": "must be >= 2, got integer 1"}
