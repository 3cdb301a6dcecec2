"""components/minimax/algorithms.py: deterministic convergence, schedules, oracle calls, and the paper's
phenomenon at tiny size (vanilla S-EG stalls at a noise floor, perturbed S-EG decays ~ t^(-1/4))."""

from __future__ import annotations

import math

import pytest
import torch

from components.minimax.algorithms import (
    PerturbedExtragradient,
    PerturbedOptimisticGDA,
    StochasticExtragradient,
    StochasticOptimisticGDA,
)
from components.minimax.games import BilinearGame, QuadraticGame
from components.minimax.task import log_log_slope, log_points


def iterate(game, algorithm, steps: int, replicates: int = 2, seed: int = 0, every: int | None = None):  # type: ignore[no-untyped-def]
    generator = torch.Generator().manual_seed(seed)
    x, y = game.sample((replicates,), generator)
    algorithm.reset(game, x, y, steps)
    points, history = set(log_points(steps, 10)), ([], [])
    for t in range(steps):
        x, y = algorithm.step(game, x, y, t, generator)
        if t + 1 in points:
            history[0].append(t + 1)
            history[1].append(float(game.gap(x, y).mean()))
    return x, y, history


VANILLA = {
    "seg": lambda: StochasticExtragradient(step_size=0.5),
    "sogda": lambda: StochasticOptimisticGDA(step_size=0.5),
}
PERTURBED = {
    "perturbed_seg": lambda **k: PerturbedExtragradient(**k),
    "perturbed_sogda": lambda **k: PerturbedOptimisticGDA(**k),
}
DETERMINISTIC_GAMES = {
    "bilinear_box": lambda: BilinearGame(5, sigma=0.0, saddle_radius=0.5, min_singular_value=0.6),
    "bilinear_simplex": lambda: BilinearGame(3, constraint="simplex", sigma=0.0, saddle_radius=0.5, min_singular_value=0.6),
    "quadratic": lambda: QuadraticGame(5, sigma=0.0, min_singular_value=0.6),
}


@pytest.mark.parametrize("game_name", DETERMINISTIC_GAMES)
@pytest.mark.parametrize("name", VANILLA)
def test_vanilla_methods_converge_without_noise(name: str, game_name: str) -> None:
    game = DETERMINISTIC_GAMES[game_name]()
    x, y, _ = iterate(game, VANILLA[name](), 1500)
    assert float(game.gap(x, y).max()) < 1e-6


@pytest.mark.parametrize("name", PERTURBED)
def test_perturbed_methods_converge_without_noise(name: str) -> None:
    # anchored at the saddle (saddle_radius 0 puts it at the center): no regularization bias
    game = BilinearGame(5, sigma=0.0, saddle_radius=0.0, min_singular_value=0.6)
    x, y, _ = iterate(game, PERTURBED[name](), 1500)
    assert float(game.gap(x, y).max()) < 1e-3  # sublinear: the step decays like 1/(lambda t)
    # anchored away from the saddle: the bias is O(lambda) = O(T^(-1/4)) and shrinks with T
    game = BilinearGame(5, sigma=0.0, saddle_radius=0.5, min_singular_value=0.6)
    gaps = [float(game.gap(*iterate(game, PERTURBED[name](), steps)[:2]).mean()) for steps in (100, 1600)]
    assert gaps[1] < gaps[0] and gaps[1] <= 3.0 * 1600 ** -0.25


def test_perturbed_schedules() -> None:
    algorithm = PerturbedExtragradient(regularization=2.0, max_step_size=0.5, step_scale=2.0, step_offset=10.0)
    algorithm.reset(BilinearGame(2), torch.zeros(1, 2), torch.zeros(1, 2), horizon=10000)
    assert algorithm.regularization(0) == algorithm.regularization(999) == pytest.approx(2.0 * 10000 ** -0.25)
    assert algorithm.step_size(0) == 0.5
    assert algorithm.step_size(990) == pytest.approx(2.0 / (0.2 * 1000))
    anytime = PerturbedOptimisticGDA(lambda_schedule="anytime", exponent=0.25)
    assert anytime.regularization(15) == pytest.approx(16 ** -0.25)
    assert StochasticExtragradient(0.4, schedule="sqrt").step_size(3) == pytest.approx(0.2)
    assert StochasticOptimisticGDA(0.4).regularization(5) == 0.0


@pytest.mark.parametrize("vanilla, perturbed", [(StochasticExtragradient, PerturbedExtragradient),
                                                 (StochasticOptimisticGDA, PerturbedOptimisticGDA)])
def test_harmonic_vanilla_step_is_the_perturbed_methods_step(vanilla, perturbed) -> None:  # type: ignore[no-untyped-def]
    """perturbed_eg's baseline on the method's own step family (issue 30): the harmonic schedule
    with eta_max = max_step_size, step_scale = c / lambda_0, the same t_0 and exponent gives, at
    every horizon T and iteration t, exactly the perturbed method's step; only the operator's
    regularization differs."""
    method = perturbed(regularization=0.5, exponent=0.25, max_step_size=0.4, step_scale=3.0, step_offset=7.0)
    baseline = vanilla(step_size=0.4, schedule="harmonic", step_scale=3.0 / 0.5, step_offset=7.0, horizon_exponent=0.25)
    game = BilinearGame(2)
    for horizon in (100, 3000, 100000):
        for algorithm in (method, baseline):
            algorithm.reset(game, torch.zeros(1, 2), torch.zeros(1, 2), horizon)
        steps = [method.step_size(t) for t in (0, 5, 50, 500, horizon - 1)]
        assert [baseline.step_size(t) for t in (0, 5, 50, 500, horizon - 1)] == pytest.approx(steps, rel=1e-12)
        assert steps[0] == 0.4 and steps[-1] < 0.4  # capped at first, then decaying like 1/t
        assert baseline.regularization(0) == 0.0 and method.regularization(0) > 0.0
    flat = vanilla(step_size=1.0, schedule="harmonic", step_scale=2.0, step_offset=10.0, horizon_exponent=0.0)
    flat.reset(game, torch.zeros(1, 2), torch.zeros(1, 2), 50)
    assert flat.step_size(0) == pytest.approx(0.2) and flat.step_size(30) == pytest.approx(0.05)


def test_anchor_choices() -> None:
    game = BilinearGame(3, constraint="simplex")
    x, y = game.sample((2,), torch.Generator().manual_seed(0))
    center = PerturbedExtragradient(anchor="center")
    center.reset(game, x, y, 10)
    assert torch.allclose(center.anchor[0], torch.full((3,), 1 / 3, dtype=torch.float64))
    initial = PerturbedExtragradient(anchor="initial")
    initial.reset(game, x, y, 10)
    assert torch.equal(initial.anchor[0], x)


@pytest.mark.parametrize("make, calls", [(VANILLA["seg"], 2), (VANILLA["sogda"], 1),
                                         (PERTURBED["perturbed_seg"], 2), (PERTURBED["perturbed_sogda"], 1)])
def test_oracle_calls_per_step(make, calls: int) -> None:  # type: ignore[no-untyped-def]
    game = BilinearGame(3)
    counted = []
    original = game.grad
    game.grad = lambda x, y, generator=None: counted.append(1) or original(x, y, generator)  # type: ignore[method-assign]
    algorithm = make()
    iterate(game, algorithm, 20)
    assert len(counted) == 20 * calls + (1 if calls == 1 else 0)  # OGDA's first extrapolation samples once more
    assert algorithm.oracle_calls_per_step == calls


def test_noise_floor_versus_perturbed_rate_at_tiny_size() -> None:
    """NOTES.md's prototype, 10x10 box game, sigma = 1: the last iterate of vanilla S-EG stays at a
    noise floor (slope ~ 0), perturbed S-EG's gap falls like t^(-1/4) and ends below half of it."""
    game = BilinearGame(10, sigma=1.0, saddle_radius=0.5)
    _, _, vanilla = iterate(game, StochasticExtragradient(0.1), 2000, replicates=16)
    _, _, perturbed = iterate(game, PerturbedExtragradient(lambda_schedule="anytime"), 2000, replicates=16)
    vanilla_slope = log_log_slope(*vanilla, window=0.5)
    perturbed_slope = log_log_slope(*perturbed, window=0.5)
    assert vanilla_slope is not None and perturbed_slope is not None
    assert abs(vanilla_slope) < 0.05
    assert -0.35 < perturbed_slope < -0.15
    assert perturbed[1][-1] < 0.5 * vanilla[1][-1]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: StochasticOptimisticGDA(schedule="linear"), "schedule must be 'constant', 'sqrt' or 'harmonic', got 'linear'"),
        (lambda: PerturbedOptimisticGDA(lambda_schedule="fixed"), "lambda_schedule must be 'horizon' or 'anytime', got 'fixed'"),
        (lambda: PerturbedOptimisticGDA(anchor="origin"), "anchor must be 'center' or 'initial', got 'origin'"),
    ],
)
def test_bad_arguments(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=f"^{message}$"):
        make()


def test_perturbed_step_needs_reset() -> None:
    game = BilinearGame(2)
    with pytest.raises(RuntimeError, match=r"PerturbedExtragradient.reset\(...\) must be called before step\(...\)"):
        PerturbedExtragradient().step(game, *game.center(), 0)
    assert math.isfinite(float(game.gap(*StochasticExtragradient().step(game, *game.center(), 0))))


@pytest.mark.parametrize("name, arguments, problems", [
    ("seg", {"step_size": 0.0}, {"step_size": "must be > 0, got number 0.0"}),
    ("sogda", {"step_scale": 0.0, "horizon_exponent": -0.5}, {"step_scale": "must be > 0, got number 0.0",
                                                              "horizon_exponent": "must be >= 0, got number -0.5"}),
    ("perturbed_seg", {"regularization": -1.0, "exponent": 0}, {"regularization": "must be > 0, got number -1.0",
                                                               "exponent": "must be > 0, got integer 0"}),
    ("perturbed_sogda", {"regularization": 1e-9, "step_offset": 1e-9}, {}),
])
def test_argument_ranges(argument_problems, name: str, arguments: dict, problems: dict) -> None:  # type: ignore[no-untyped-def]
    assert argument_problems("minimax_algorithms", name, **arguments) == problems
