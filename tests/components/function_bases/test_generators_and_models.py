"""components/function_bases/generators.py and models.py: the skew generator and the Lie basis."""

from __future__ import annotations

import pytest
import torch

from components.function_bases.bases import FourierBasis, periodic_grid
from components.function_bases.generators import SkewFiniteRankNN
from components.function_bases.integrators import RK4, Cayley, MatrixExp
from components.function_bases.models import FixedBasis, LieBasis
from components.function_bases.task import orthonormality_error


@pytest.fixture(autouse=True)
def seeded_float64(float64: None) -> None:
    torch.manual_seed(0)


def test_generator_matrix_is_the_galerkin_matrix_of_the_skew_kernel() -> None:
    """A_mn = <phi_m, G phi_n> with k(x, y) = sum_i a_i(x) b_i(y) - b_i(x) a_i(y), by double quadrature."""
    generator = SkewFiniteRankNN(pairs=2, hidden=16, fourier_features=9, quadrature_points=64)
    reference = FourierBasis(11)
    phi = reference.values(generator.points)
    t = torch.tensor(0.3)
    matrix = generator.matrix(t, phi)
    inputs = torch.cat([generator.embedded, t.expand(64, 1)], dim=1)
    a, b = generator.a(inputs), generator.b(inputs)
    kernel = a @ b.T - b @ a.T  # k(x_i, y_j)
    w = generator.weights
    by_hand = phi.T @ (w[:, None] * kernel * w[None, :]) @ phi
    assert torch.allclose(matrix, by_hand, atol=1e-13)
    assert torch.allclose(matrix, -matrix.T, atol=0)
    assert torch.linalg.matrix_rank(matrix) <= 4


def small_generator(**kwargs: object) -> SkewFiniteRankNN:
    return SkewFiniteRankNN(hidden=16, fourier_features=9, quadrature_points=64, output_scale=30.0, **kwargs)


@pytest.mark.parametrize("integrator", [Cayley(8), MatrixExp(8)], ids=["cayley", "matrix_exp"])
def test_lie_basis_is_orthonormal_on_every_fine_grid(integrator: object) -> None:
    basis = LieBasis(FourierBasis(17), small_generator(), integrator)
    for n in (64, 256):
        points, weights = periodic_grid(n, 1)
        values, grads = basis.evaluate(points, derivatives=True)
        assert orthonormality_error(values, weights) < 1e-12
        assert grads.shape == (n, 17, 1)
    assert not torch.allclose(basis.rotation(), torch.eye(17), atol=1e-2)  # it did move


def test_rk4_basis_leaves_the_group_and_float32_loses_precision() -> None:
    rk4 = LieBasis(FourierBasis(17), small_generator(), RK4(8))
    points, weights = periodic_grid(64, 1)
    assert orthonormality_error(rk4.evaluate(points)[0], weights) > 1e-10
    torch.set_default_dtype(torch.float32)
    single = LieBasis(FourierBasis(17), small_generator(), Cayley(8))
    points, weights = periodic_grid(64, 1)
    assert single.rotation().dtype == torch.float32
    assert orthonormality_error(single.evaluate(points)[0], weights) > 1e-8


def test_zero_generator_keeps_the_reference_and_fixed_basis_is_it() -> None:
    reference = FourierBasis(9)
    basis = LieBasis(reference, SkewFiniteRankNN(fourier_features=5, output_scale=0.0), Cayley(4))
    points, _ = periodic_grid(32, 1)
    assert torch.equal(basis.evaluate(points)[0], reference.values(points))
    values, grads = FixedBasis(reference).evaluate(points, derivatives=True)
    assert torch.equal(values, reference.values(points)) and grads.shape == (32, 9, 1)


def test_coordinate_inputs_and_two_dimensions() -> None:
    generator = SkewFiniteRankNN(inputs="coordinates", dim=2, quadrature_points=16)
    assert generator.embedded.shape == (256, 2)
    basis = LieBasis(FourierBasis(13, dim=2), generator, Cayley(5))
    points, weights = periodic_grid(16, 2)
    assert orthonormality_error(basis.evaluate(points)[0], weights) < 1e-12


def test_dimensions_must_match() -> None:
    with pytest.raises(ValueError, match=r"generator.dim \(2\) must equal reference.dim \(1\)"):
        LieBasis(FourierBasis(5), SkewFiniteRankNN(dim=2, quadrature_points=8), Cayley())
    with pytest.raises(ValueError, match="inputs must be 'fourier' or 'coordinates', got 'raw'"):
        SkewFiniteRankNN(inputs="raw")  # type: ignore[arg-type]
