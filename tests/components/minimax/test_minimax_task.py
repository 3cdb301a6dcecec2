"""components/minimax/task.py and components/minimax/oracle.py: the minimax task driven by Lightning,
directly and through a spec."""

from __future__ import annotations

import math
from pathlib import Path

import lightning as L
import pytest
import torch
from mlflow.tracking import MlflowClient

from components.minimax.oracle import OracleSteps
from components.minimax.algorithms import PerturbedExtragradient, StochasticExtragradient, StochasticOptimisticGDA
from components.minimax.games import BilinearGame
from components.minimax.task import Minimax, log_log_slope, log_points

SPECS = Path(__file__).resolve().parents[3] / "specs" / "perturbed_eg"


def fit_and_test(task: Minimax, steps: int, **trainer: object) -> dict[str, float]:
    kwargs = dict(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                  enable_checkpointing=False, accelerator="cpu")
    trainer_ = L.Trainer(**{**kwargs, **trainer})
    data = OracleSteps(steps)
    trainer_.fit(task, datamodule=data)
    return {k: float(v) for k, v in trainer_.test(task, datamodule=data, verbose=False)[0].items()}


def test_log_points_and_slope() -> None:
    assert log_points(100, 2) == [1, 3, 10, 32, 100]
    assert log_points(50, 1) == [1, 10, 50]
    assert log_points(1, 10) == [1]
    steps = [10, 100, 1000, 10000]
    assert log_log_slope(steps, [t ** -0.25 for t in steps], window=1.0) == pytest.approx(-0.25)
    # window 0.5 of T = 10000: t >= 100, so the first point (a different law) is left out
    assert log_log_slope(steps, [5.0, 1.0, 0.5, 0.25], window=0.5) == pytest.approx(-math.log10(4) / 2)
    assert log_log_slope([1], [1.0], window=0.5) is None


def test_task_runs_through_lightning() -> None:
    L.seed_everything(0, verbose=False)
    task = Minimax(BilinearGame(4, sigma=0.5, saddle_radius=0.5), PerturbedExtragradient(), replicates=3)
    metrics = fit_and_test(task, 50)
    assert task.history[0] == log_points(50, 10)
    assert metrics["test/iterations"] == 50 and metrics["test/oracle_calls"] == 100
    assert metrics["test/gap"] == pytest.approx(task.history[1][-1])
    assert math.isfinite(metrics["test/gap_slope"]) and metrics["test/gap_std"] >= 0
    assert task.x.dtype == torch.float64 and task.x.shape == (3, 4)
    assert task.algorithm.horizon == 50


def test_max_steps_counts_iterations_and_runs_are_seeded() -> None:
    def run(seed: int) -> tuple[dict[str, float], Minimax]:
        L.seed_everything(seed, verbose=False)
        task = Minimax(BilinearGame(3), StochasticOptimisticGDA(0.2))
        return fit_and_test(task, 100, max_steps=20), task

    first, task = run(0)
    assert first["test/iterations"] == 20 and first["test/oracle_calls"] == 20
    assert task.algorithm.horizon == 20  # the horizon the trainer will run, not the data's length
    assert run(0)[0] == first and run(1)[0]["test/gap"] != first["test/gap"]


def test_center_start_and_deterministic_convergence() -> None:
    game = BilinearGame(3, sigma=0.0, saddle_radius=0.5, min_singular_value=0.6)
    task = Minimax(game, StochasticExtragradient(0.5), init="center")
    metrics = fit_and_test(task, 1000)
    assert metrics["test/gap"] < 1e-6


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"problem": torch.nn.Linear(2, 2)}, TypeError,
         "problem must be a game (a registered problem), got Linear without grad, gap, project_x, project_y, center, sample"),
        ({"algorithm": torch.optim.SGD}, TypeError,
         "algorithm must be a minimax algorithm (components.minimax.algorithms), got type without reset"),
        ({"init": "corner"}, ValueError, "init must be 'random' or 'center', got 'corner'"),
        ({"horizons": [10, 10]}, ValueError, "horizons must be distinct iteration counts, got [10, 10]"),
    ],
)
def test_bad_arguments(kwargs: dict, error: type, message: str) -> None:
    args = {"problem": BilinearGame(2), "algorithm": StochasticExtragradient(), **kwargs}
    with pytest.raises(error) as info:
        Minimax(**args)
    assert str(info.value) == message


def test_horizons_are_separate_fixed_horizon_runs() -> None:
    # Without noise and from the center, the run of horizon 30 inside a run of 100 iterations is
    # exactly a run of 30 iterations on its own: lambda = 30^(-1/4) and its steps, not 100's.
    game = BilinearGame(4, sigma=0.0, saddle_radius=0.5)
    task = Minimax(game, PerturbedExtragradient(), init="center", horizons=[100, 10, 30])
    metrics = fit_and_test(task, 100)
    alone = fit_and_test(Minimax(game, PerturbedExtragradient(), init="center"), 30)
    assert metrics["test/gap_T30"] == pytest.approx(alone["test/gap"], rel=1e-12)
    assert metrics["test/gap_T100"] == metrics["test/gap"]
    assert sorted(a.horizon for a in task.horizon_algorithms.values()) == [10, 30]
    gaps = [metrics[f"test/gap_T{t}"] for t in (10, 30, 100)]
    assert metrics["test/horizon_slope"] == pytest.approx(log_log_slope([10, 30, 100], gaps, window=1.0))
    assert metrics["test/gap_std_T10"] == 0.0  # one start (the center), no noise: identical replicates


def test_horizons_beyond_the_run_are_left_out() -> None:
    L.seed_everything(0, verbose=False)
    task = Minimax(BilinearGame(3), StochasticExtragradient(0.1), replicates=2, horizons=[5, 50])
    with pytest.warns(UserWarning, match=r"^horizons \[50\] are longer than the run \(20 iterations\): left out$"):
        metrics = fit_and_test(task, 20)
    assert "test/gap_T5" in metrics and "test/gap_T50" not in metrics and "test/horizon_slope" not in metrics


def test_oracle_steps(argument_problems) -> None:  # type: ignore[no-untyped-def]
    data = OracleSteps(5)
    assert [int(b) for b in data.train_dataloader()] == [0, 1, 2, 3, 4]
    assert len(data.test_dataloader()) == 1
    assert argument_problems("data", "oracle_steps", num_steps=0) == {"num_steps": "must be >= 1, got integer 0"}


def test_tiny_spec_runs_end_to_end(tracked: str) -> None:
    from framework.runner import run

    result = run(SPECS / "tiny_perturbed_sogda.yaml", ["data.num_steps=40", "task.replicates=2"])
    client = MlflowClient(tracked)
    assert client.get_run(result.run_id).info.status == "FINISHED"
    history = client.get_metric_history(result.run_id, "train/gap")
    assert [m.step for m in history] == log_points(40, 10)
    assert result.metrics["test/oracle_calls"] == 40
    assert all(math.isfinite(v) for v in result.metrics.values())


@pytest.mark.parametrize("arguments, problems", [
    ({"replicates": 0, "slope_window": 0.0}, {"replicates": "must be >= 1, got integer 0",
                                              "slope_window": "must be > 0 and <= 1, got number 0.0"}),
    ({"horizons": [10, 0]}, {"horizons.1": "must be >= 1, got integer 0"}),
    ({"replicates": 1, "slope_window": 1.0, "horizons": [1]}, {}),
])
def test_argument_ranges(argument_problems, arguments: dict, problems: dict) -> None:  # type: ignore[no-untyped-def]
    assert argument_problems("tasks", "minimax", **arguments) == problems
