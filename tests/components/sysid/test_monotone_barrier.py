"""monotone_barrier's pieces: the freeway is monotone, the Max-Monotone network is monotone (and
the unconstrained one is rejected by the structural check), the cell check is the corner argument
(a certificate it accepts survives a dense random audit; a barrier too small is refused), the
dense grid counts the same cells, the loop certifies from few queries, and the claim function."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.sysid.certify import BarrierSynthesis
from components.sysid.claims import loglog_slopes_by_seed
from components.sysid.monotone import FreewayCTM, MaxMonotone, cover_cell, dense_cells


def test_freeway_is_monotone_and_stays_in_the_box() -> None:
    system = FreewayCTM(6, seed=3)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (2000, 6))
    y = np.minimum(1, x + rng.uniform(0, 0.3, x.shape) * (rng.uniform(size=x.shape) < 0.5))
    fx, fy = system.step(x), system.step(y)
    assert (fx <= fy + 1e-12).all()
    assert (fx >= 0).all() and (fx <= 1).all()


def test_freeway_rejects_a_non_monotone_time_step() -> None:
    with pytest.raises(ValueError, match="monotone"):
        FreewayCTM(4, time_step=0.9)


def test_max_monotone_is_monotone_and_the_control_is_rejected() -> None:
    g = torch.Generator().manual_seed(0)
    net = MaxMonotone(5, 8, 1.0, monotone=True, generator=g)
    x = torch.rand(500, 5, dtype=torch.float64)
    up = x + 0.2 * torch.rand(500, 5, dtype=torch.float64)
    assert (net(x) <= net(up) + 1e-12).all() and net.is_monotone()
    control = MaxMonotone(5, 8, 1.0, monotone=False, generator=torch.Generator().manual_seed(0))
    assert sum(p.numel() for p in control.parameters()) == sum(p.numel() for p in net.parameters())
    assert not control.is_monotone()


def _box_barrier(dim: int, level: float) -> MaxMonotone:
    """A monotone network whose pieces are steep increasing steps through `level`: S ~ [0, level]^n."""
    net = MaxMonotone(dim, 1, 1.0)
    with torch.no_grad():
        net.raw_w.fill_(50.0)            # softplus(50) = 50: psi_i(t) = tanh(50 (t - level))
        net.a.fill_(-50.0 * level)
        net.raw_v.copy_(torch.log(torch.expm1(torch.ones_like(net.raw_v))))  # softplus -> 1
        net.b.zero_()
    return net


def test_cover_cell_and_dense_cells_count_the_same_box() -> None:
    net = _box_barrier(3, 0.3)
    lower, upper, k = cover_cell(net, 10)
    assert np.allclose(lower, 0.3) or np.allclose(lower, 0.2)
    assert np.allclose(upper - lower, 0.1)
    count, mesh = dense_cells(k, 10, limit=10**6)
    assert count == int(np.prod(k + 1)) and len(mesh) == count
    assert dense_cells(k, 10, limit=count - 1)[1] is None


def _task(dim: int, **kw) -> BarrierSynthesis:
    torch.manual_seed(0)
    task = BarrierSynthesis(FreewayCTM(dim, seed=0), **kw)
    task._start()
    return task


def _loop(task: BarrierSynthesis, rounds: int = 20) -> dict[str, float]:
    for r in range(rounds):
        task.advance(None, r)
        if task.done:
            break
    return task.metrics()


def test_the_loop_certifies_with_few_queries_and_the_audit_agrees() -> None:
    out = _loop(_task(6, steps=200))
    assert out["certified"] == 1.0 and out["audit_violations"] == 0.0
    assert out["n_queries"] == 94 + out["verify_queries"] and out["verify_queries"] == out["rounds"]


def test_the_check_refuses_a_barrier_that_is_not_inductive() -> None:
    """Busy on-ramps (demand 0.05-0.06 per cell) fill the freeway beyond 0.1: the box [0, 0.1]^n
    holds the initial set and avoids the unsafe one, but the image of its corner leaves it, so the
    corner check must fail -- and the audit finds real violations."""
    torch.manual_seed(0)
    task = BarrierSynthesis(FreewayCTM(4, ramp_low=0.05, ramp_high=0.06, seed=0), steps=0)
    task._start()
    task.net = _box_barrier(4, 0.1)
    checks = task._verify()
    assert checks["init_ok"] == 1.0 and checks["unsafe_ok"] == 1.0 and checks["corner_check_ok"] == 0.0
    assert task._audit() > 0


def test_unconstrained_weights_are_never_certified() -> None:
    out = _loop(_task(4, steps=200, monotone=False))
    assert out["monotone_ok"] == 0.0 and out["certified"] == 0.0


def test_dense_grid_stops_at_the_budget() -> None:
    out = _loop(_task(8, steps=200, verifier="dense_grid", max_queries=2000))
    assert out["budget_exceeded"] == 1.0 and out["certified"] == 0.0
    assert out["n_queries"] <= 2000 < out["n_queries_needed"]


def test_loglog_slopes_by_seed() -> None:
    dims, seeds = [2, 4, 8, 2, 4, 8], [0, 0, 0, 1, 1, 1]
    slopes = loglog_slopes_by_seed([3 * d for d in dims[:3]] + [5 * d * d for d in dims[3:]], dims, seeds)
    assert slopes == pytest.approx([1.0, 2.0])
