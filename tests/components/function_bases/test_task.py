"""components/function_bases/task.py: the basis_learning task through Lightning and through specs."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch

from components.function_bases.bases import FourierBasis
from components.function_bases.data import GaussianProcessFunctions
from components.function_bases.generators import SkewFiniteRankNN
from components.function_bases.integrators import Cayley
from components.function_bases.models import FixedBasis, LieBasis
from components.function_bases.objectives import CapturedVariance
from components.function_bases.task import BasisLearning, orthonormality_error
from framework.runner import run

SPECS = Path(__file__).resolve().parents[3] / "specs" / "lie_bases"


def trainer(**kwargs: object) -> L.Trainer:
    return L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                     enable_checkpointing=False, accelerator="cpu", precision="64-true", **kwargs)


def small_data() -> GaussianProcessFunctions:
    return GaussianProcessFunctions(num_samples=400, test_samples=400, points=64, test_points=[64, 128],
                                    train_steps=100, max_frequency=12, seed=0)


def test_training_raises_the_share_above_fourier_and_stays_orthonormal(float64: None) -> None:
    torch.manual_seed(0)
    basis = LieBasis(FourierBasis(17), SkewFiniteRankNN(hidden=16, fourier_features=17, quadrature_points=64), Cayley(8))
    task = BasisLearning(basis, CapturedVariance(k=3), optimizer=lambda params: torch.optim.Adam(params, lr=1e-2))
    data = small_data()
    run_ = trainer(log_every_n_steps=10)
    run_.fit(task, datamodule=data)
    metrics = {k: float(v) for k, v in run_.test(task, datamodule=data, verbose=False)[0].items()}
    assert metrics["test/captured_variance_n64"] > metrics["test/reference_variance_n64"] + 0.05
    assert metrics["test/variance_ratio_n128"] > 0.95
    assert metrics["test/orthonormality_error_n128"] < 1e-12
    assert metrics["test/captured_variance_n64"] == pytest.approx(metrics["test/captured_variance_n128"], abs=1e-9)


def test_a_fixed_basis_is_tested_without_an_optimizer(float64: None) -> None:
    task = BasisLearning(FixedBasis(FourierBasis(17)), CapturedVariance(k=3))
    metrics = trainer().test(task, datamodule=small_data(), verbose=False)[0]
    assert float(metrics["test/captured_variance_n64"]) == pytest.approx(float(metrics["test/reference_variance_n64"]))
    with pytest.raises(ValueError, match="fitting a basis needs an `optimizer:` section"):
        trainer().fit(task, datamodule=small_data())


def test_orthonormality_error_and_argument_checks() -> None:
    q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    weights = torch.full((8,), 1 / 8, dtype=torch.float64)
    assert float(orthonormality_error(q * 8**0.5, weights)) < 1e-13
    assert float(orthonormality_error(q * 8**0.5 * 1.1, weights)) == pytest.approx(0.21)
    with pytest.raises(TypeError, match="model must be a basis"):
        BasisLearning(torch.nn.Linear(2, 2), CapturedVariance())
    with pytest.raises(TypeError, match="objective must be a basis objective, got int without loss"):
        BasisLearning(FixedBasis(FourierBasis(3)), 3)


SHORT = ["data.train_steps=5", "data.num_samples=50", "data.test_samples=50"]


def test_precision_64_true_builds_in_float64_and_32_true_does_not(tracked: str) -> None:
    """The spec word `hardware.precision: 64-true`: the basis, its quadrature and the data are built
    in float64 (not float32 cast up), so the basis is orthonormal to round-off; in 32-true to ~1e-6."""
    double = run(SPECS / "tiny_pca.yaml", SHORT).metrics
    single = run(SPECS / "tiny_pca.yaml", [*SHORT, "hardware.precision=32-true"]).metrics
    assert double["test/orthonormality_error_n512"] < 1e-13
    assert 1e-8 < single["test/orthonormality_error_n512"] < 1e-4


TINY_2D = ["data.points=16", "data.test_points=[16, 32]", "data.train_steps=3", "model.generator.quadrature_points=16",
           "model.generator.hidden=8"]


@pytest.mark.parametrize(("spec", "extra"), [
    ("pca_2d.yaml", ["data.num_samples=20", "data.test_samples=20", "data.max_frequency=6"]),
    ("operator_2d.yaml", ["data.reference_frequency=4"]),
], ids=["pca_2d", "operator_2d"])
def test_paper_scale_2d_specs_run_shortened(spec: str, extra: list[str], tracked: str) -> None:
    """The 2D paper-scale specs (no asset: synthetic data) run end to end on tiny grids."""
    metrics = run(SPECS / spec, [*TINY_2D, *extra, "hardware.accelerator=cpu"]).metrics
    assert metrics["test/orthonormality_error_n32"] < 1e-12
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())
