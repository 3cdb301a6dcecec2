"""components/function_bases/data.py: GP functional data and the Sturm-Liouville operator."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from components.function_bases.data import GaussianProcessFunctions, SturmLiouville, reference_eigenvalues, warp


def test_gp_samples_are_functions_the_same_on_every_grid() -> None:
    data = GaussianProcessFunctions(num_samples=20, test_samples=10, points=32, test_points=[32, 128], seed=3)
    coarse, fine = data.sample(data.test_coefficients, 32), data.sample(data.test_coefficients, 128)
    assert coarse["functions"].shape == (10, 32) and fine["functions"].shape == (10, 128)
    assert torch.allclose(fine["functions"][:, ::4], coarse["functions"], atol=1e-12)
    assert coarse["name"] == "n32" and float(coarse["weights"].sum()) == pytest.approx(1.0)
    other = GaussianProcessFunctions(num_samples=20, test_samples=10, points=32, seed=4)
    assert not torch.allclose(other.train_coefficients, data.train_coefficients)
    assert [b["name"] for b in data.test_dataloader()] == ["n32", "n128"]
    assert len(list(data.train_dataloader())) == 300


def test_gp_is_not_stationary() -> None:
    """The amplitude s(x) = 1 + 0.5 cos(2 pi x): variance at x = 0 about 9x that at x = 1/2."""
    data = GaussianProcessFunctions(num_samples=2000, test_samples=2, points=4, seed=0)
    variance = data.sample(data.train_coefficients, 4)["functions"].var(dim=0)
    assert float(variance[0] / variance[2]) == pytest.approx(9.0, rel=0.25)


def test_2d_samples_follow_the_grid_order() -> None:
    data = GaussianProcessFunctions(num_samples=3, test_samples=2, points=8, test_points=[8, 16], dim=2,
                                    max_frequency=4, seed=1)
    coarse, fine = data.sample(data.test_coefficients, 8), data.sample(data.test_coefficients, 16)
    grid = fine["functions"].reshape(2, 16, 16)[:, ::2, ::2].reshape(2, 64)
    assert torch.allclose(grid, coarse["functions"], atol=1e-12)


def test_warp_is_a_periodic_monotone_map() -> None:
    x = torch.linspace(0, 1, 101, dtype=torch.float64)
    u = warp(x, 0.6)
    assert float(u[0]) == 0.0 and float(u[-1]) == pytest.approx(1.0) and bool((u.diff() > 0).all())


def test_reference_eigenvalues_of_the_laplacian_by_hand() -> None:
    """p = 1, q = 0: -u'' on the periodic interval has 0, (2 pi)^2 twice, (4 pi)^2 twice; on the 2D
    torus 0 and (2 pi)^2 four times."""
    w = (2 * math.pi) ** 2
    assert np.allclose(reference_eigenvalues(5, 1, 0.0, 0.0, 8), [0, w, w, 4 * w, 4 * w], atol=1e-9)
    assert np.allclose(reference_eigenvalues(5, 2, 0.0, 0.0, 3), [0, w, w, w, w], atol=1e-9)


def test_reference_eigenvalues_match_finite_differences() -> None:
    """The variable-coefficient operator by an independent periodic finite-difference scheme
    (conservative, 2000 points, O(h^2)): the lowest eigenvalues agree to 1e-4 relative."""
    n = 2000
    x = np.arange(n) / n
    h = 1.0 / n
    p_half = 1 + 0.5 * np.sin(2 * np.pi * (x + h / 2))  # p at x_{i+1/2}
    q = 100.0 * (1 + np.cos(2 * np.pi * x))
    matrix = np.diag((p_half + np.roll(p_half, 1)) / h**2 + q)
    off = -p_half / h**2
    matrix += np.diag(off[:-1], 1) + np.diag(off[:-1], -1)
    matrix[0, -1] = matrix[-1, 0] = off[-1]
    fd = scipy.linalg.eigh(matrix, eigvals_only=True, subset_by_index=[0, 2])
    spectral = reference_eigenvalues(3, 1, 0.5, 100.0, 64)
    assert np.allclose(spectral, fd, rtol=1e-4)


def test_sturm_liouville_batches() -> None:
    data = SturmLiouville(points=16, test_points=[16, 64], eigenvalues=2, reference_frequency=16)
    batch = data.batch(16)
    assert batch["stiffness"].shape == (16,) and float(batch["potential"].min()) >= 0
    assert batch["eigenvalues"].shape == (2,) and [b["name"] for b in data.test_dataloader()] == ["n16", "n64"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"test_points": [64, 64]}, r"test_points must be distinct grid sizes, at least one, got \[64, 64\]"),
    ({"dim": 3}, "dim must be 1 or 2, got 3"),
    ({"train_steps": 0}, "train_steps must be >= 1, got 0"),
    ({"warp_strength": 1.0}, r"warp_strength and modulation must lie in \(-1, 1\), got 1.0, 0.5"),
])
def test_gp_arguments_are_checked(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GaussianProcessFunctions(**kwargs)


def test_operator_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match=r"stiffness_modulation must lie in \(-1, 1\), got 1.5"):
        SturmLiouville(stiffness_modulation=1.5)
