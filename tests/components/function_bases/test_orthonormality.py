"""Orthonormality of the learned basis: a property of the construction (Phi(1) = Phi_ref Q(1) with
Q(1) a product of Cayley transforms of skew matrices), so it is tested here rather than claimed in
specs/lie_bases/claims.yaml. Positive case: a basis trained by the spec's settings (the abstract's
rank-2 generator) is orthonormal to float64 round-off on the training grid and on a finer one.
Negative cases: the check catches a basis that is not orthonormal (a perturbed rotation, RK4 steps,
float32 arithmetic), so it is not true whatever the basis."""

from __future__ import annotations

import pytest
import torch

from components.function_bases.bases import FourierBasis, periodic_grid
from components.function_bases.data import GaussianProcessFunctions
from components.function_bases.generators import SkewFiniteRankNN
from components.function_bases.integrators import RK4, Cayley
from components.function_bases.models import LieBasis
from components.function_bases.objectives import CapturedVariance
from components.function_bases.task import orthonormality_error

FLOAT64_TOLERANCE = 1e-12  # measured ~1e-14 over 33 functions; float32 round-off alone is ~1e-6


def trained_basis(integrator: object, steps: int = 30) -> LieBasis:
    """The tiny spec's basis (33 Fourier functions, rank-2 generator: pairs = 1) after `steps` Adam
    steps on the PCA objective (small data: the property does not depend on the fit)."""
    torch.manual_seed(0)
    generator = SkewFiniteRankNN(pairs=1, hidden=32, fourier_features=33, quadrature_points=128)
    basis = LieBasis(FourierBasis(33), generator, integrator)
    data = GaussianProcessFunctions(num_samples=100, test_samples=10, points=128, train_steps=1, seed=0)
    batch = data.sample(data.train_coefficients, 128)
    objective, optimizer = CapturedVariance(k=5), torch.optim.Adam(basis.parameters(), lr=1e-2)
    for _ in range(steps):
        optimizer.zero_grad()
        objective.loss(basis, batch).backward()
        optimizer.step()
    return basis


def test_trained_basis_is_orthonormal_to_float64_precision(float64: None) -> None:
    basis = trained_basis(Cayley(20))
    q = basis.rotation().detach()
    assert not torch.allclose(q, torch.eye(33), atol=1e-2)  # training moved it away from Fourier
    assert (q.T @ q - torch.eye(33)).abs().max() < FLOAT64_TOLERANCE
    assert basis.generator_rank() == 2  # the abstract's rank-2 generator
    with torch.no_grad():
        for n in (128, 512):
            points, weights = periodic_grid(n, 1)
            assert orthonormality_error(basis.evaluate(points)[0], weights) < FLOAT64_TOLERANCE


def test_a_perturbed_non_orthogonal_basis_is_caught(float64: None) -> None:
    basis = trained_basis(Cayley(20), steps=5)
    points, weights = periodic_grid(128, 1)
    with torch.no_grad():
        q = basis.rotation()
        perturbed = q + 1e-6 * torch.randn(33, 33, generator=torch.Generator().manual_seed(1))
        values = basis.reference.values(points) @ perturbed
        assert orthonormality_error(values, weights) > 1e-7
        assert orthonormality_error(values, weights) > 1e4 * FLOAT64_TOLERANCE


def test_rk4_steps_and_float32_are_caught(float64: None) -> None:
    """The same construction loses the property when a step is not a rotation (RK4) or when the
    arithmetic is float32: both must fail the float64 tolerance."""
    rk4 = trained_basis(RK4(20), steps=5)
    points, weights = periodic_grid(128, 1)
    with torch.no_grad():
        assert orthonormality_error(rk4.evaluate(points)[0], weights) > FLOAT64_TOLERANCE
    torch.set_default_dtype(torch.float32)  # the fixture restores it
    single = trained_basis(Cayley(20), steps=5)
    points, weights = periodic_grid(128, 1)
    with torch.no_grad():
        assert single.rotation().dtype == torch.float32
        assert orthonormality_error(single.evaluate(points)[0], weights) > 1e-8


def test_the_basis_is_a_set_of_functions_the_same_on_every_fine_grid(float64: None) -> None:
    """Why specs/lie_bases/ has no resolution claim: the generator integrates on its own grid, so
    the basis does not depend on the test grid, and every test integral (band-limited basis times
    smooth periodic data) is exact to round-off by the periodic trapezoid rule on 128 and 512
    points alike: the shares at N = 128 and N = 512 agree to ~1e-15 by construction."""
    basis = trained_basis(Cayley(20), steps=5)
    data = GaussianProcessFunctions(num_samples=10, test_samples=100, points=128, train_steps=1, seed=3)
    objective = CapturedVariance(k=5)
    with torch.no_grad():
        shares = [float(objective.share(basis.evaluate(b["points"])[0], b))
                  for b in (data.sample(data.test_coefficients, n) for n in (128, 512))]
    assert shares[0] == pytest.approx(shares[1], abs=1e-12)
