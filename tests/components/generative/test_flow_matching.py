"""Flow matching: the couplings, the loss at the true velocity, the solvers' orders of accuracy, and
a trained field that carries one Gaussian onto another."""

from __future__ import annotations

import math

import pytest
import torch

from components.generative.flow_matching import (
    VelocityMLP, couple, flow_matching_loss, integrate, interpolate, ot_assignment)


def test_minibatch_ot_finds_the_assignment_that_a_permutation_hides() -> None:
    gen = torch.Generator().manual_seed(0)
    x0 = torch.randn(32, 3, generator=gen)
    perm = torch.randperm(32, generator=gen)
    x1 = (x0 + 0.01)[perm]  # the closest partner of x0[i] is x1[perm.argsort()[i]]
    assert torch.equal(ot_assignment(x0, x1), perm.argsort())
    _, paired = couple(x0, x1, "minibatch_ot")
    _, shuffled = couple(x0, x1, "independent", generator=gen)
    assert (paired - x0).pow(2).sum() < 0.01 * (shuffled - x0).pow(2).sum()


def test_couplings_reject_what_they_cannot_pair() -> None:
    with pytest.raises(ValueError, match="equal batch sizes"):
        couple(torch.zeros(3, 2), torch.zeros(4, 2), "paired")
    with pytest.raises(ValueError, match="equal batch sizes"):
        couple(torch.zeros(3, 2), torch.zeros(4, 2), "minibatch_ot")
    with pytest.raises(ValueError, match="coupling must be one of"):
        couple(torch.zeros(3, 2), torch.zeros(3, 2), "sinkhorn")


def test_loss_is_zero_for_the_true_velocity_of_a_paired_path() -> None:
    x0, x1 = torch.randn(64, 2), torch.randn(64, 2)
    shift = x1 - x0

    def true_velocity(x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None) -> torch.Tensor:
        assert torch.allclose(x, interpolate(x0, x1, t))  # the path point the loss asks about
        return shift

    assert flow_matching_loss(true_velocity, x0, x1, coupling="paired").item() == 0.0
    wrong = flow_matching_loss(lambda x, t, c: torch.zeros_like(x), x0, x1, coupling="paired")
    assert wrong.item() == pytest.approx(shift.pow(2).mean().item(), rel=1e-6)


@pytest.mark.parametrize(("solver", "order"), [("euler", 1), ("midpoint", 2), ("rk4", 4)])
def test_solvers_have_their_order_of_accuracy(solver: str, order: int) -> None:
    # dx/dt = -x: x(1) = x(0) / e. Halving the step divides the error by ~2**order.
    x = torch.ones(1, 1, dtype=torch.float64)
    errors = [(integrate(lambda x, t, c: -x, x, steps=n, solver=solver) - math.exp(-1)).abs().item()
              for n in (8, 16)]
    assert errors[0] / errors[1] == pytest.approx(2 ** order, rel=0.15)


def test_integrate_returns_the_path_and_passes_time_and_condition() -> None:
    seen = []

    def velocity(x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None) -> torch.Tensor:
        seen.append(t[0].item())
        return cond.expand_as(x)

    path = integrate(velocity, torch.zeros(2, 1), steps=4, cond=torch.full((2, 1), 3.0), return_path=True)
    assert path.shape == (5, 2, 1)
    assert torch.allclose(path[-1], torch.full((2, 1), 3.0))
    assert seen == [0.0, 0.25, 0.5, 0.75]
    with pytest.raises(ValueError, match="solver must be one of"):
        integrate(velocity, torch.zeros(2, 1), steps=1, solver="heun", cond=torch.zeros(2, 1))


def test_velocity_mlp_checks_its_condition() -> None:
    field = VelocityMLP(dim=3, cond_dim=2, hidden=(8,))
    assert field(torch.zeros(5, 3), torch.rand(5), torch.zeros(5, 2)).shape == (5, 3)
    with pytest.raises(ValueError, match="condition of width 2"):
        field(torch.zeros(5, 3), torch.rand(5))
    with pytest.raises(ValueError, match="even"):
        VelocityMLP(dim=3, time_features=3)


def test_a_trained_field_transports_one_gaussian_onto_another() -> None:
    torch.manual_seed(0)
    target_mean = torch.tensor([4.0, -2.0])
    field = VelocityMLP(dim=2, hidden=(64, 64))
    optimizer = torch.optim.Adam(field.parameters(), lr=3e-3)
    for _ in range(400):
        loss = flow_matching_loss(field, torch.randn(128, 2), 0.5 * torch.randn(128, 2) + target_mean,
                                  coupling="minibatch_ot")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        moved = integrate(field, torch.randn(2000, 2), steps=20, solver="midpoint")
    assert torch.allclose(moved.mean(0), target_mean, atol=0.15)
    assert torch.allclose(moved.std(0), torch.tensor([0.5, 0.5]), atol=0.1)
