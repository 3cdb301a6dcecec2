"""components/llops/kernels.py: query_key_pairs and the kernel_approximation task."""

from __future__ import annotations

import functools

import lightning as L
import pytest
import torch

from components.sequence.feature_maps import Elu1, LLoPSLearned, PolySketchRandom
from components.llops.kernels import KernelApproximation, QueryKeyPairs, anisotropic_vectors, kernel_rel_error


def test_relative_error_is_the_frobenius_ratio() -> None:
    exact = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
    assert kernel_rel_error(exact + torch.tensor([[0.0, 1.0], [0.0, 0.0]]), exact).item() == pytest.approx(0.2)


def test_anisotropic_vectors_have_unit_mean_square_norm_and_decaying_scales() -> None:
    x = anisotropic_vectors(torch.Generator().manual_seed(0), 20000, 8, decay=1.0).double()
    assert (x ** 2).sum(1).mean().item() == pytest.approx(1.0, abs=0.02)
    scales = torch.arange(1, 9, dtype=torch.float64) ** -1.0
    assert torch.allclose(x.std(0), scales / scales.norm(), rtol=0.03)


def fit(feature_map: object, steps: int) -> dict[str, float]:
    data = QueryKeyPairs(dim=16, num_train=128, num_test=128, train_steps=steps, seed=0)
    task = KernelApproximation(feature_map, head_dim=16, optimizer=lambda p: torch.optim.Adam(p, lr=1e-2))
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=False, accelerator="cpu")
    if steps:
        trainer.fit(task, datamodule=data)
    return {k: float(v) for k, v in trainer.test(task, datamodule=data, verbose=False)[0].items()}


def test_fitting_the_learned_sketch_lowers_its_error_below_the_random_start() -> None:
    start = fit(functools.partial(PolySketchRandom, rank=4, seed=0), 0)
    learned = fit(functools.partial(LLoPSLearned, rank=4, seed=0), 60)
    assert start["test/num_features"] == learned["test/num_features"] == 16
    assert learned["test/kernel_rel_error"] < 0.7 * start["test/kernel_rel_error"]


def test_the_task_needs_a_polynomial_feature_map_of_the_data_width() -> None:
    with pytest.raises(ValueError, match="feature_map Elu1 approximates no polynomial kernel"):
        KernelApproximation(Elu1, head_dim=8)
    task = KernelApproximation(functools.partial(PolySketchRandom, rank=2), head_dim=8)
    with pytest.raises(ValueError, match="head_dim is 8 but the data's vectors have dim 4"):
        task.errors({"q": torch.ones(3, 4), "k": torch.ones(3, 4)})
