"""components/function_bases/bases.py: grids and the Fourier reference basis."""

from __future__ import annotations

import math

import pytest
import torch

from components.function_bases.bases import FourierBasis, axis_frequency, fourier_1d, periodic_grid


def gram_error(values: torch.Tensor, weights: torch.Tensor) -> float:
    gram = values.T @ (weights[:, None] * values)
    return float((gram - torch.eye(gram.shape[0], dtype=gram.dtype)).abs().max())


def test_periodic_grid() -> None:
    points, weights = periodic_grid(4, 1, torch.float64)
    assert points[:, 0].tolist() == [0.0, 0.25, 0.5, 0.75] and weights.tolist() == [0.25] * 4
    points, weights = periodic_grid(3, 2, torch.float64)
    assert points.shape == (9, 2) and points[1].tolist() == [0.0, 1 / 3]  # first axis slowest
    assert float(weights.sum()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="dim must be 1 or 2, got 3"):
        periodic_grid(4, 3)


def test_fourier_1d_functions_by_hand() -> None:
    x = torch.tensor([0.1, 0.35], dtype=torch.float64)
    values, derivatives = fourier_1d(x, 4)
    r2, w = math.sqrt(2), 2 * math.pi
    expected = [[1, r2 * math.cos(w * t), r2 * math.sin(w * t), r2 * math.cos(2 * w * t)] for t in x.tolist()]
    slopes = [[0, -r2 * w * math.sin(w * t), r2 * w * math.cos(w * t), -2 * r2 * w * math.sin(2 * w * t)] for t in x.tolist()]
    assert torch.allclose(values, torch.tensor(expected, dtype=torch.float64), atol=1e-14)
    assert torch.allclose(derivatives, torch.tensor(slopes, dtype=torch.float64), atol=1e-13)
    assert [axis_frequency(i) for i in range(5)] == [0, 1, 1, 2, 2]


@pytest.mark.parametrize(("size", "dim", "n"), [(33, 1, 128), (33, 1, 512), (40, 2, 32)])
def test_fourier_basis_is_orthonormal_on_fine_enough_grids(size: int, dim: int, n: int) -> None:
    basis = FourierBasis(size, dim)
    points, weights = periodic_grid(n, dim, torch.float64)
    assert gram_error(basis.values(points), weights) < 1e-13


def test_fourier_basis_aliases_on_a_coarse_grid() -> None:
    """Frequencies up to 16 need more than 32 points: on 32 points cos(32 pi x) vanishes."""
    basis = FourierBasis(33, 1)
    assert basis.max_frequency == 16
    points, weights = periodic_grid(32, 1, torch.float64)
    assert gram_error(basis.values(points), weights) > 0.5


def test_2d_order_and_gradients_match_autograd() -> None:
    basis = FourierBasis(9, 2)
    # the constant, then the four functions of |k| = 1, then the four of |k|^2 = 2
    assert basis.pairs[0] == (0, 0) and sorted(basis.pairs[1:5]) == [(0, 1), (0, 2), (1, 0), (2, 0)]
    assert all(axis_frequency(i) == 1 and axis_frequency(j) == 1 for i, j in basis.pairs[5:])
    points = torch.rand(7, 2, dtype=torch.float64, requires_grad=True)
    values, grads = basis.evaluate(points, derivatives=True)
    for m in range(9):
        (auto,) = torch.autograd.grad(values[:, m].sum(), points, retain_graph=True)
        assert torch.allclose(grads[:, m, :], auto, atol=1e-12)


def test_points_shape_is_checked() -> None:
    with pytest.raises(ValueError, match=r"points must have shape \(n, 1\), got \(5, 2\)"):
        FourierBasis(5, 1).values(torch.zeros(5, 2))
