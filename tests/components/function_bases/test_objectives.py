"""components/function_bases/objectives.py: captured variance and Rayleigh quotients, by hand."""

from __future__ import annotations

import math

import pytest
import torch

from components.function_bases.bases import FourierBasis, periodic_grid
from components.function_bases.data import SturmLiouville
from components.function_bases.models import FixedBasis
from components.function_bases.objectives import CapturedVariance, RayleighQuotient


class Permuted(torch.nn.Module):
    """The reference basis with its columns in another order (a basis whose leading functions differ)."""

    def __init__(self, reference: FourierBasis, order: list[int]) -> None:
        super().__init__()
        self.reference, self.order = reference, order

    def evaluate(self, points: torch.Tensor, derivatives: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        values, grads = self.reference.evaluate(points, derivatives)
        return values[:, self.order], None if grads is None else grads[:, self.order]


def functional_batch(n: int = 64) -> dict:
    """f_b = c1 phi_1 + c2 phi_2 + c5 phi_5 (Fourier functions), centred coefficients with variances
    9, 4, 1 exactly (a +-1 design): total variance 14."""
    points, weights = periodic_grid(n, 1, torch.float64)
    phi = FourierBasis(7).values(points)
    signs = torch.tensor([[s1, s2, s3] for s1 in (-1, 1) for s2 in (-1, 1) for s3 in (-1, 1)], dtype=torch.float64)
    coefficients = signs * torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)
    functions = coefficients @ phi[:, [1, 2, 5]].T
    return {"functions": functions, "points": points, "weights": weights, "name": "n64"}


def test_captured_variance_by_hand() -> None:
    batch = functional_batch()
    reference = FourierBasis(7)
    report = CapturedVariance(k=2).report(FixedBasis(reference), batch)
    assert report["reference_variance"] == pytest.approx(9 / 14)       # phi_0 carries none, phi_1 9
    assert report["best_in_span_variance"] == pytest.approx(13 / 14)   # phi_1 and phi_2
    assert report["grid_pca_variance"] == pytest.approx(13 / 14)
    best = Permuted(reference, [1, 2, 0, 3, 4, 5, 6])
    assert CapturedVariance(k=2).report(best, batch)["captured_variance"] == pytest.approx(13 / 14)
    assert float(CapturedVariance(k=3).loss(best, batch)) == pytest.approx(-13 / 14)
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        CapturedVariance(k=0)


def test_rayleigh_quotients_by_hand(float64: None) -> None:
    """p = 1, q = 1 + cos(2 pi x): R(1) = int q = 1, R(sqrt 2 cos 2 pi x) = R(sqrt 2 sin 2 pi x) =
    (2 pi)^2 + 1 (int cos^3 = 0)."""
    data = SturmLiouville(points=32, stiffness_modulation=0.0, potential_depth=1.0, eigenvalues=3, reference_frequency=16)
    batch = data.batch(32)
    basis = FixedBasis(FourierBasis(5))
    w = (2 * math.pi) ** 2
    values, grads = basis.evaluate(batch["points"], derivatives=True)
    quotients = RayleighQuotient(k=3).quotients(values, grads, batch)
    assert quotients[:3].tolist() == pytest.approx([1.0, w + 1, w + 1])
    assert float(RayleighQuotient(k=2).loss(basis, batch)) == pytest.approx((2 * 1.0 + (w + 1)) / 3)
    report = RayleighQuotient(k=3).report(basis, batch)
    exact = batch["eigenvalues"].tolist()
    assert report["rayleigh_2"] == pytest.approx(w + 1) and report["eigenvalue_1"] == pytest.approx(exact[0])
    expected = max(abs(r - e) / e for r, e in zip([1.0, w + 1, w + 1], exact))
    assert report["reference_rel_error"] == pytest.approx(expected)
    assert report["eigenvalue_rel_error"] == pytest.approx(expected)  # the fixed basis is the reference
    assert report["ritz_rel_error"] < 1e-3  # 5 Fourier functions nearly hold the first 3 eigenfunctions
    assert exact[0] < 1.0  # the true ground state lies below the constant's quotient
