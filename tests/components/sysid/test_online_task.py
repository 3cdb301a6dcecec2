"""components/sysid/task.py and components/tasks/loop.py: projected OGD's regret in a case worked
by hand, the oracle and mis-tuned bookkeeping, and a run through Lightning and a spec."""

from __future__ import annotations

import math
from pathlib import Path

import lightning as L
import numpy as np
import pytest

from components.data.stream import StreamData
from components.sysid.step_rules import FixedStep, ResidualAdaptiveStep
from components.sysid.streams import DriftingLinear
from components.sysid.task import OnlineIdentification, project, step_grid

SPECS = Path(__file__).resolve().parents[3] / "specs" / "drift_sysid"


class ConstantStream(StreamData):
    """d = 1, phi_t = 1, y_t = theta* = 1, no noise: theta_t = 1 - (1 - eta)^t from theta_0 = 0."""

    def __init__(self, steps: int, block: int) -> None:
        super().__init__(block)
        self.steps = steps

    def make_streams(self):
        ones = np.ones((1, self.steps))
        return ({"x": ones[..., None], "y": ones, "theta": ones[..., None], "mask": ones.astype(bool)},
                ["const"], np.zeros(1, dtype=np.int64))


def fit_and_test(task: OnlineIdentification, data: StreamData, **trainer: object) -> dict[str, float]:
    kwargs = dict(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                  enable_checkpointing=False, accelerator="cpu")
    trainer_ = L.Trainer(**{**kwargs, **trainer})
    trainer_.fit(task, datamodule=data)
    return {k: float(v) for k, v in trainer_.test(task, datamodule=data, verbose=False)[0].items()}


def test_projection_and_grid() -> None:
    theta = np.array([[3.0, 4.0], [0.3, -0.4]])
    assert np.allclose(project(theta, "ball", 1.0), [[0.6, 0.8], [0.3, -0.4]], atol=1e-15)
    assert project(theta, "box", 1.0).tolist() == [[1.0, 1.0], [0.3, -0.4]]
    assert step_grid(1e-3, 0.5, 3) == pytest.approx(10.0 ** (np.arange(-9, 0) / 3))
    assert step_grid(0.01, 1.0, 1).tolist() == pytest.approx([0.01, 0.1, 1.0])


def test_regret_of_a_known_case_and_the_oracle_bookkeeping() -> None:
    """R_T(eta) = sum_{t<T} 1/2 (1 - eta)^(2t) = 1/2 (1 - q^T) / (1 - q), q = (1 - eta)^2; with
    no noise and no drift the largest interior step of the grid is the oracle."""
    T = 50
    task = OnlineIdentification([FixedStep(0.05, label="hand")], grid_low=0.01, grid_high=0.1, grid_per_decade=1,
                                mistuning=10.0, radius=5.0)
    metrics = fit_and_test(task, ConstantStream(T, block=7))
    assert task.etas.tolist() == pytest.approx([0.001, 0.01, 0.1, 1.0])

    def regret(eta: float) -> float:
        q = (1 - eta) ** 2
        return 0.5 * (1 - q**T) / (1 - q) if q != 0 else 0.5

    assert metrics["test/eta_oracle_const"] == pytest.approx(0.1)
    assert metrics["test/regret_oracle_const"] == pytest.approx(regret(0.1), rel=1e-6)  # logged as float32
    assert metrics["test/regret_over_const"] == pytest.approx(regret(1.0))  # eta = 1 lands on theta* at once
    assert metrics["test/regret_under_const"] == pytest.approx(regret(0.01), rel=1e-6)  # logged as float32
    assert metrics["test/regret_hand_const"] == pytest.approx(regret(0.05), rel=1e-6)  # logged as float32
    assert metrics["test/ratio_hand_max"] == pytest.approx(regret(0.05) / regret(0.1), rel=1e-6)  # logged as float32
    assert metrics["test/ratio_mistuned_min"] == pytest.approx(regret(1.0) / regret(0.1), rel=1e-6)  # logged as float32


def test_oracle_and_adaptive_on_a_drifting_system() -> None:
    """A slow drift and little noise: the grid has an interior optimum, the mis-tuned steps pay more,
    and the adaptive rule's proxy is of the order of the true variation per step."""
    L.seed_everything(0, verbose=False)
    data = DriftingLinear(dim=3, horizons=[3000], betas=[0.0], variation=3.0, noise=0.05, replicates=2, block=500)
    task = OnlineIdentification([ResidualAdaptiveStep(scale=3.0)], grid_low=1e-3, grid_high=0.5)
    metrics = fit_and_test(task, data)
    assert 1e-3 < metrics["test/eta_oracle_beta0_T3000"] < 0.5
    assert metrics["test/ratio_over_beta0_T3000"] > 2 and metrics["test/ratio_under_beta0_T3000"] > 2
    assert metrics["test/ratio_adaptive_beta0_T3000"] < 2
    assert 0.3 < metrics["test/proxy_ratio_adaptive_beta0_T3000"] < 3
    assert task.steps.item() == 3000


def test_oracle_slope_per_drift_rate_is_the_log_log_fit_over_horizons() -> None:
    """One slope per series `<series>_T<horizon>`: the least-squares exponent of the oracle's
    regret against T, from the same per-group values the run logs."""
    L.seed_everything(0, verbose=False)
    data = DriftingLinear(dim=2, horizons=[200, 400, 800], betas=[0.0, 0.5], variation=1.0, noise=0.05,
                          replicates=1, block=200)
    task = OnlineIdentification([], grid_low=1e-2, grid_high=0.5, grid_per_decade=2, mistuning=10**0.5)
    metrics = fit_and_test(task, data)
    for series in ("beta0", "beta0.5"):
        regrets = [metrics[f"test/regret_oracle_{series}_T{T}"] for T in (200, 400, 800)]
        expected = np.polyfit(np.log([200, 400, 800]), np.log(regrets), 1)[0]
        assert metrics[f"test/slope_regret_oracle_{series}"] == pytest.approx(expected, abs=1e-5)  # float32
    assert not any(k.startswith("test/slope_") for k in fit_and_test(
        OnlineIdentification([], grid_low=1e-2, grid_high=0.5), DriftingLinear(horizons=[300], replicates=1, block=300)))


def test_learner_labels_and_mistuning_must_fit_the_grid() -> None:
    with pytest.raises(ValueError, match="learner labels must differ"):
        OnlineIdentification([FixedStep(0.1), FixedStep(0.2)])
    with pytest.raises(ValueError, match=r"log10\(mistuning\) \* grid_per_decade must be an integer, got 0.903"):
        OnlineIdentification([], mistuning=2.0, grid_per_decade=3)
    with pytest.raises(TypeError, match="learners must be step rules"):
        OnlineIdentification([object()])


def test_test_without_fit_is_an_error() -> None:
    task = OnlineIdentification([])
    with pytest.raises(RuntimeError, match="reports what fit accumulated"):
        task.test_step(None, 0)


def test_tiny_spec_runs_through_the_framework(tracked: str) -> None:
    from framework.runner import run

    result = run(SPECS / "tiny.yaml", ["data.horizons=[200, 400]", "data.replicates=1", "data.block=100"])
    assert result.metrics["test/ratio_mistuned_min"] > 1
    assert all(math.isfinite(v) for v in result.metrics.values())
    assert {"test/regret_oracle_beta0.3333_T400", "test/ratio_inv_sqrt_max", "test/slope_regret_oracle_beta0"} <= set(result.metrics)
