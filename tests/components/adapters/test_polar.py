"""components/adapters/polar.py and rank.py: PoLAR adapters, the landing step, effective rank."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from components.adapters.polar import (
    LandingAdam,
    effective_rank,
    polar_adapter,
    polar_delta_weight,
    polar_layers,
    stiefel_distance,
)
from components.adapters.rank import adapter_updates
from components.models.mlp import MLP


def mlp(seed: int) -> MLP:
    torch.manual_seed(seed)
    return MLP(16, 5, hidden=(12, 12))


def test_polar_starts_as_the_loaded_base_and_trains_only_its_factors() -> None:
    base_weights = mlp(0).state_dict()
    model = polar_adapter(mlp(1), rank=3, alpha=6.0, targets=["net.0", "net.2"])
    missing = model.load_state_dict(base_weights, strict=False).missing_keys
    assert sorted(missing) == sorted(f"net.{i}.polar_{p}" for i in (0, 2) for p in ("u", "v", "theta"))
    x = torch.randn(7, 16)
    assert torch.allclose(model(x), mlp(0)(x), atol=1e-6)  # Theta = 0: the base's function
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == set(missing)
    for layer in polar_layers(model):
        assert stiefel_distance(layer.polar_u.detach()) < 1e-5 and stiefel_distance(layer.polar_v.detach()) < 1e-5
        assert layer.polar_u.stiefel and layer.polar_v.stiefel and not hasattr(layer.polar_theta, "stiefel")


def test_polar_targets_match_a_name_or_its_end_after_a_dot() -> None:
    model = polar_adapter(nn.Sequential(mlp(0), mlp(1)), rank=2, targets=["net.2"])
    assert len(polar_layers(model)) == 2  # 0.net.2 and 1.net.2


def test_polar_update_is_u_theta_vt_scaled() -> None:
    model = polar_adapter(mlp(0), rank=2, alpha=4.0, targets=["net.0"])
    layer = polar_layers(model)[0]
    with torch.no_grad():
        layer.polar_theta.copy_(torch.tensor([[1.0, 0.5], [0.0, 2.0]]))
    x = torch.randn(3, 16)
    expected = x @ (layer.weight + polar_delta_weight(layer)).T + layer.bias
    assert torch.allclose(layer(x), expected, atol=1e-5)
    assert torch.allclose(polar_delta_weight(layer), 2.0 * layer.polar_u @ layer.polar_theta @ layer.polar_v.T)


def test_polar_rejects_a_target_that_is_not_linear_and_a_rank_too_large() -> None:
    with pytest.raises(ValueError, match="names no nn.Linear"):
        polar_adapter(mlp(0), targets=["net.1"])
    with pytest.raises(ValueError, match="rank"):
        polar_adapter(mlp(0), rank=13, targets=["net.2"])


def test_landing_keeps_a_stiefel_factor_near_the_manifold_while_it_descends() -> None:
    """Fit X (20 x 3, orthonormal columns) to a target frame: the loss falls, X stays orthonormal."""
    torch.manual_seed(0)
    target, _ = torch.linalg.qr(torch.randn(20, 3))
    start, _ = torch.linalg.qr(torch.randn(20, 3))
    x = nn.Parameter(start.clone())
    x.stiefel = True
    opt = LandingAdam([x], lr=0.02)
    first = None
    for _ in range(300):
        opt.zero_grad()
        loss = -(x * target).sum()
        first = float(loss) if first is None else first
        loss.backward()
        opt.step()
    assert float(loss) < first - 1.0
    assert stiefel_distance(x.detach()) < 0.05


def test_landing_steps_plain_parameters_as_adam() -> None:
    torch.manual_seed(0)
    a, b = nn.Parameter(torch.randn(4, 3)), None
    b = nn.Parameter(a.detach().clone())
    ours, adam = LandingAdam([a], lr=0.01), torch.optim.Adam([b], lr=0.01)
    for _ in range(5):
        for p, opt in ((a, ours), (b, adam)):
            opt.zero_grad()
            (p ** 3).sum().backward()
            opt.step()
    assert torch.allclose(a, b, atol=1e-6)


def test_effective_rank_ranges_from_one_to_the_rank() -> None:
    assert effective_rank(torch.outer(torch.randn(6), torch.randn(5))) == pytest.approx(1.0, abs=1e-6)
    assert effective_rank(torch.eye(4)) == pytest.approx(4.0)
    assert effective_rank(torch.zeros(3, 3)) == 0.0
    assert 1.0 < effective_rank(torch.diag(torch.tensor([3.0, 1.0, 0.1]))) < 3.0


def test_adapter_updates_reads_polar_and_peft_lora_layers() -> None:
    model = polar_adapter(mlp(0), rank=2, targets=["net.0", "net.4"])
    assert [r for r, _ in adapter_updates(model)] == [2, 2]
    pytest.importorskip("peft")
    from components.adapters.lora import peft_lora

    lora = peft_lora(mlp(0), rank=3, targets=["net.0"])
    (rank, delta), = adapter_updates(lora)
    assert rank == 3 and delta.shape == (12, 16)
