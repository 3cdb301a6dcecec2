"""Tests for components/fairness/soft_rank.py (Blondel et al. 2020 soft ranks)."""

import itertools
import time

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from components.fairness.soft_rank import hard_rank, soft_rank


def _projection_brute_force(z: np.ndarray) -> np.ndarray:
    """Projection of z onto the permutahedron of (B, ..., 1) by a generic QP over Rado's inequalities:
    every subset A sums to at most the |A| largest entries of rho, the whole vector to sum(rho)."""
    size = len(z)
    rho = np.arange(size, 0, -1, dtype=float)
    cons = [{"type": "eq", "fun": lambda m: m.sum() - rho.sum()}]
    for k in range(1, size):
        for subset in itertools.combinations(range(size), k):
            idx = list(subset)
            cons.append({"type": "ineq", "fun": lambda m, idx=idx, k=k: rho[:k].sum() - m[idx].sum()})
    start = np.full(size, rho.mean())
    result = minimize(lambda m: 0.5 * ((m - z) ** 2).sum(), start, jac=lambda m: m - z,
                      constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return result.x


@pytest.mark.parametrize("z", [
    [0.3, -1.2, 2.5],
    [0.0, 0.1, 0.05, -0.02],
    [1.0, 1.0, 1.0, 4.0],
    [3.0, -2.0, 0.5, 0.4, 0.45],
], ids=["b3", "b4-close", "b4-ties", "b5"])
def test_soft_rank_matches_brute_force_projection(z):
    expected = _projection_brute_force(np.asarray(z))
    got = soft_rank(torch.tensor(z, dtype=torch.float64), regularization_strength=1.0)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("gap, expected", [(0.0, [1.5, 1.5]), (0.4, [1.7, 1.3]), (3.0, [2.0, 1.0])])
def test_soft_rank_two_values_closed_form(gap, expected):
    # For B = 2 the projection onto the segment [(1, 2), (2, 1)] is 1.5 +- clip(gap / 2, 0, 0.5).
    got = soft_rank(torch.tensor([gap, 0.0], dtype=torch.float64))
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)


def test_soft_rank_hard_limit_and_invariants():
    values = torch.randn(3, 50, dtype=torch.float64)
    ranks = soft_rank(values, regularization_strength=1e-6)
    torch.testing.assert_close(ranks, hard_rank(values))
    soft = soft_rank(values, regularization_strength=10.0)
    torch.testing.assert_close(soft.sum(-1), torch.full((3,), 50 * 51 / 2, dtype=torch.float64))
    flat = soft_rank(values, regularization_strength=1e6)
    torch.testing.assert_close(flat, torch.full_like(values, 25.5), atol=1e-3, rtol=0)


def test_soft_rank_ties_share_a_rank():
    ranks = soft_rank(torch.tensor([2.0, 5.0, 2.0, -1.0]), regularization_strength=1e-3)
    torch.testing.assert_close(ranks, torch.tensor([2.5, 4.0, 2.5, 1.0]))


@pytest.mark.parametrize("shape, strength", [((1,), 1.0), ((5,), 0.5), ((17,), 0.3), ((3, 12), 1.0)])
def test_soft_rank_gradcheck(shape, strength):
    torch.manual_seed(0)
    values = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: soft_rank(v, strength), (values,))


def test_soft_rank_gradcheck_with_ties():
    values = torch.tensor([0.2, 0.2, -0.7, 1.5, 0.2, -0.7], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: soft_rank(v, 0.25), (values,))


def test_soft_rank_is_fast_at_16384():
    values = torch.randn(16384, requires_grad=True)
    start = time.perf_counter()
    soft_rank(values, 0.02).pow(2).sum().backward()
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("kwargs, message", [
    ({"regularization_strength": 0.0}, "regularization_strength must be > 0, got 0.0"),
    ({"regularization": "kl"}, "regularization must be 'l2', got 'kl'"),
])
def test_soft_rank_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        soft_rank(torch.zeros(3), **kwargs)
