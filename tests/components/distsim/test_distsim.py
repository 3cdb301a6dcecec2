"""components/distsim: the sparsifier, the problems, the methods' time model and estimators, the
simulated clock and the `distributed_time` task driven by Lightning; the `interior_grid` claim
function. Fast: small d, few rounds."""

from __future__ import annotations

import math

import lightning as L
import pytest
import torch

from components.distsim.claims import interior_grid
from components.distsim.methods import M4, SGD, Inkheart, RandKSGD, SyncSGD, density, sparsify
from components.distsim.problems import SeparableValley
from components.distsim.simulator import Cluster, Simulation, checkpoint_grid, compute_times
from components.distsim.task import DistributedTime
from components.minimax.oracle import OracleSteps
from framework.claims.evidence import Undecided


def _cluster(problem, n: int, h: float = 1.0, kappa: float = 0.5, heterogeneity: str = "homogeneous",
             seed: int = 0) -> Cluster:
    return Cluster(problem, n, compute_times(n, h, heterogeneity), kappa, torch.Generator().manual_seed(seed))


def test_randk_keeps_k_coordinates_and_is_unbiased() -> None:
    g = torch.Generator().manual_seed(0)
    v = torch.arange(1.0, 17.0).expand(20000, 16)
    out, k = sparsify(v, 0.25, g)
    assert torch.all(k == 4) and torch.all((out != 0).sum(-1) == 4)
    assert torch.allclose(out[out != 0] / v[out != 0], torch.tensor(4.0))
    assert torch.allclose(out.mean(0), v[0], rtol=0.05)
    full, k = sparsify(v[:2], 1.0, g)
    assert torch.equal(full, v[:2]) and torch.all(k == 16)
    assert density(1, 1 / 3) == 1.0 and density(1000, 1 / 3) == pytest.approx(0.1)


def test_quadratic_has_affine_gradients_and_the_valley_does_not() -> None:
    """The structural assumption as tested: the mean of gradients at perturbed copies is the
    gradient at the mean for the quadratic (asymmetry 1), not for the valley."""
    torch.manual_seed(0)
    x = torch.randn(8)
    u = torch.randn(64, 8)
    u = u - u.mean(0)  # perturbations that average to zero
    quad = SeparableValley(8, sigma=0.0, seed=1)
    assert torch.allclose(quad.grad(x + u).mean(0), quad.grad(x), atol=1e-5)
    valley = SeparableValley(8, sigma=0.0, asymmetry=8.0, seed=1)
    assert (valley.grad(x + u).mean(0) - valley.grad(x)).norm() > 0.1
    assert float(quad.a.max()) == pytest.approx(1.0) and float(quad.a.min()) >= 0.01 - 1e-6
    assert float(quad.value(quad.c)) == 0.0 and float(valley.value(valley.c + 0.3)) > 0
    with pytest.raises(ValueError, match="asymmetry"):
        SeparableValley(8, asymmetry=0.5)


def test_noise_variance_is_sigma_squared_over_count() -> None:
    p = SeparableValley(16, sigma=2.0, seed=0)
    x = torch.zeros(50000, 16)
    g = torch.Generator().manual_seed(0)
    noise = p.noisy_grad(x, 4.0, g) - p.grad(x)
    assert float(noise.pow(2).sum(-1).mean()) == pytest.approx(4.0 / 4.0, rel=0.03)


def test_round_times_follow_the_model() -> None:
    p = SeparableValley(32, sigma=1.0, seed=0)
    x = p.start().expand(3, -1).clone()
    sim = _cluster(p, 64, h=1.0, kappa=0.5)
    _, t = SGD().round(sim, x)
    assert torch.all(t == 1.0)                       # one machine, no communication
    _, t = SyncSGD().round(sim, x)
    assert torch.all(t == 2 * 0.5 * 32 + 1.0)        # d kappa both ways + h
    _, t = RandKSGD(sparsity_exponent=1 / 3).round(sim, x)
    assert torch.all(t == 0.5 * 32 + 1.0 + 0.5 * 8)  # x in full, K = 32 / 4 back
    m4 = M4(sparsity_exponent=1 / 3, sync_probability=0.0)
    m4.reset(sim, x)
    _, first = m4.round(sim, x)                      # the first round broadcasts x in full
    assert torch.all(first == 0.5 * 32 + 1.0 + 0.5 * 8)
    _, t = m4.round(sim, x - 0.1)
    assert torch.all(t == 0.5 * 8 + 1.0 + 0.5 * 8)   # K each way
    hetero = _cluster(p, 4, h=1.0, kappa=0.5, heterogeneity="sqrt")
    assert torch.allclose(hetero.h, torch.tensor([1.0, 2.0 ** 0.5, 3.0 ** 0.5, 2.0], dtype=torch.float64))


def test_without_compression_m4_is_synchronous_sgd_and_shadows_track_x() -> None:
    p = SeparableValley(8, sigma=0.0, seed=0)
    x = torch.randn(2, 8)
    sim = _cluster(p, 1)
    m4 = M4(sparsity_exponent=1 / 3)
    m4.reset(sim, x)
    d, _ = m4.round(sim, x)
    assert torch.allclose(d, p.grad(x), atol=1e-6)
    x2 = x - 0.3 * d
    d2, _ = m4.round(sim, x2)
    assert torch.allclose(m4.shadow[:, 0], x2) and torch.allclose(d2, p.grad(x2), atol=1e-6)


def test_shadow_errors_cancel_in_the_average_on_the_quadratic() -> None:
    """Independent sparsifiers: the server's direction on a noiseless quadratic is the gradient at
    the mean shadow, whose error shrinks with n; one shared mask does not average out."""
    p = SeparableValley(16, sigma=0.0, seed=0)
    errors = {}
    for independent in (True, False):
        x = torch.randn(200, 16)
        sim = _cluster(p, 256)
        m = M4(sparsity_exponent=1 / 3, sync_probability=0.0, independent=independent)
        m.reset(sim, x)
        m.round(sim, x)
        x2 = x - 0.5 * p.grad(x)
        m.round(sim, x2)
        errors[independent] = float((m.shadow.mean(-2) - x2).pow(2).sum(-1).mean())
    assert errors[True] < 0.05 * errors[False]


def test_inkheart_counts_gradients_in_its_window() -> None:
    p = SeparableValley(8, sigma=1.0, seed=0)
    sim = _cluster(p, 4, heterogeneity="linear")      # h = 1, 2, 3, 4
    ink = Inkheart(window=2.5)
    ink.dim = 8
    counts, compute = ink.work(sim)
    assert counts.tolist() == [2.0, 1.0, 0.0, 0.0] and torch.all(compute == 2.5)
    auto = Inkheart(sparsity_exponent=1 / 3)
    assert auto.seconds(_cluster(p, 8, kappa=0.5), 8) == pytest.approx(0.5 * (0.5 * 8 + 0.5 * 4 + 4))
    x = p.start().expand(3, -1).clone()
    ink.reset(sim, x)
    direction, _ = ink.round(sim, x)                  # workers without a gradient send nothing
    assert torch.isfinite(direction).all()


def test_simulation_finds_the_time_to_epsilon_and_stops() -> None:
    torch.manual_seed(0)
    p = SeparableValley(8, min_curvature=0.5, sigma=0.1, seed=0)
    sim = Simulation(p, SyncSGD(), _cluster(p, 4, kappa=0.1), [0.25, 0.5, 1.0], replicates=2,
                     epsilon=1e-2, budget=1000.0)
    sim.run()
    index, time = sim.best()
    assert index is not None and time == pytest.approx(sim.times()[index])
    assert bool((sim.clock > time).all()) and sim.rounds < 200
    curve = sim.curves()[index]
    reached = torch.nonzero(curve <= 1e-2)[0, 0]
    assert float(sim.checkpoints[reached]) == time and float(curve[reached - 1]) > 1e-2
    grid = checkpoint_grid(1000.0, 2, 10)
    assert len(grid) == 21 and float(grid[-1]) == 1000.0 and float(grid[0]) == pytest.approx(10.0)


def test_task_runs_through_lightning_and_logs_the_tuned_time() -> None:
    L.seed_everything(0, verbose=False)
    task = DistributedTime(SeparableValley(8, min_curvature=0.5, sigma=0.5, seed=0), M4(), workers=8, kappa=0.2,
                           epsilon=0.05, stepsizes=[0.125, 0.25, 0.5, 1.0], replicates=2, time_budget=2000.0,
                           rounds_per_step=5)
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=False, accelerator="cpu")
    data = OracleSteps(400)
    trainer.fit(task, datamodule=data)
    assert trainer.global_step < 400                  # stopped once the tuned time was known
    metrics = {k: float(v) for k, v in trainer.test(task, datamodule=data, verbose=False)[0].items()}
    assert metrics["test/reached"] == 1.0 and 0 < metrics["test/time"] < 2000.0
    assert metrics["test/log_time"] == pytest.approx(math.log(metrics["test/time"]))
    assert metrics["test/best_stepsize"] == [0.125, 0.25, 0.5, 1.0][int(metrics["test/best_index"])]
    assert metrics["test/grid_size"] == 4 and metrics["test/workers"] == 8


def test_task_rejects_a_bad_grid() -> None:
    with pytest.raises(ValueError, match="increasing"):
        DistributedTime(SeparableValley(4), SGD(), stepsizes=[1.0, 0.5])


def test_interior_grid_is_undecided_at_an_edge() -> None:
    assert interior_grid([1.0, 3.0, 6.0], 8) is True
    assert isinstance(interior_grid([0.0, 3.0], 8), Undecided)
    assert isinstance(interior_grid([7.0], 8), Undecided)
