"""components/function_bases/integrators.py: orthogonality and order of the matrix-ODE schemes."""

from __future__ import annotations

import pytest
import torch

from components.function_bases.integrators import RK4, Cayley, MatrixExp


def skew(m: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, m, generator=g, dtype=torch.float64) * scale
    return a - a.T


def orthogonality_error(q: torch.Tensor) -> float:
    return float((q.T @ q - torch.eye(q.shape[0], dtype=q.dtype)).abs().max())


def test_constant_field_expm_is_exact_and_cayley_rk4_converge() -> None:
    a = skew(6)
    exact = torch.linalg.matrix_exp(a)
    eye = torch.eye(6, dtype=torch.float64)
    assert torch.allclose(MatrixExp(3).integrate(lambda t: a, eye), exact, atol=1e-12)
    errors = {}
    for scheme in (Cayley, RK4):
        e = [float((scheme(n).integrate(lambda t: a, eye) - exact).abs().max()) for n in (40, 80)]
        errors[scheme.__name__] = e[0] / e[1]
    assert errors["Cayley"] == pytest.approx(4.0, rel=0.05)   # second order
    assert errors["RK4"] == pytest.approx(16.0, rel=0.1)      # fourth order


def test_time_dependent_field_against_the_commuting_solution() -> None:
    """A(t) = cos(3t) S commutes with itself at all t: Y(1) = expm(sin(3)/3 S)."""
    s = skew(5, seed=1)
    exact = torch.linalg.matrix_exp(torch.sin(torch.tensor(3.0, dtype=torch.float64)) / 3 * s)
    eye = torch.eye(5, dtype=torch.float64)
    for scheme in (Cayley, MatrixExp, RK4):
        y = scheme(200).integrate(lambda t: torch.cos(3 * t) * s, eye)
        assert float((y - exact).abs().max()) < 1e-4, scheme.__name__


def test_structure_preserving_schemes_stay_orthogonal_rk4_does_not() -> None:
    a = skew(8, scale=3.0)  # large steps: h |A| ~ 1 with 5 steps
    eye = torch.eye(8, dtype=torch.float64)
    assert Cayley.preserves_orthogonality and MatrixExp.preserves_orthogonality and not RK4.preserves_orthogonality
    assert orthogonality_error(Cayley(5).integrate(lambda t: a, eye)) < 1e-13
    assert orthogonality_error(MatrixExp(5).integrate(lambda t: a, eye)) < 1e-13
    assert orthogonality_error(RK4(5).integrate(lambda t: a, eye)) > 1e-3


def test_gradients_flow_through_the_steps() -> None:
    s = skew(4).requires_grad_(True)
    y = Cayley(4).integrate(lambda t: t * s, torch.eye(4, dtype=torch.float64))
    (grad,) = torch.autograd.grad(y[0, 1], s)
    assert grad.abs().sum() > 0


def test_steps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="steps must be >= 1, got 0"):
        Cayley(0)
