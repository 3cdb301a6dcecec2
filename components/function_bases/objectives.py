"""What a basis is learned for. An objective has `loss(basis, batch)` (a scalar to minimize, with
gradients through the basis) and `report(basis, batch)` (name -> float: the test metrics, with the
baselines the paper compares against, on that batch's grid). `basis.evaluate(points,
derivatives)` gives the values (n, M) and gradients (n, M, dim) of the basis functions; the batch
holds the grid's `points` and quadrature `weights` (components.function_bases.data).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from components.function_bases.data import galerkin_matrix
from components.types import PositiveInt


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


class CapturedVariance:
    """PCA of a functional dataset: maximize the share of the (centred) data's variance captured by
    the span of the first k basis functions, sum_{j<=k} mean_b <f_b, phi_j>^2 / mean_b |f_b|^2
    (inner products by the grid's quadrature). The loss is minus that share.

    Reported on each test grid: `captured_variance` (the first k learned functions), and the
    baselines `best_in_span_variance` (the best k-dimensional subspace of the reference span: the top
    k eigenvalues of the data covariance projected on the reference basis), `grid_pca_variance` (the
    best k-dimensional subspace of all functions on the grid: PCA on the grid), `reference_variance`
    (the first k reference functions, e.g. Fourier), and `variance_ratio` = captured / best in span.

    Args:
        k: Number of leading basis functions scored.
    """

    def __init__(self, k: PositiveInt = 5) -> None:
        _check_k(k)
        self.k = k

    def _centred(self, batch: dict[str, Any]) -> tuple[Tensor, Tensor, Tensor]:
        functions = batch["functions"]
        centred = functions - functions.mean(dim=0, keepdim=True)
        weights = batch["weights"]
        total = (centred**2 * weights).sum(dim=1).mean()
        return centred, weights, total

    def share(self, values: Tensor, batch: dict[str, Any]) -> Tensor:
        """Share of the variance captured by the first k columns of `values` (n, M) on the batch's grid."""
        centred, weights, total = self._centred(batch)
        projections = (centred * weights) @ values[:, : self.k]
        return (projections**2).mean(dim=0).sum() / total

    def loss(self, basis: Any, batch: dict[str, Any]) -> Tensor:
        """Minus the share captured by the basis's first k functions."""
        return -self.share(basis.evaluate(batch["points"])[0], batch)

    def report(self, basis: Any, batch: dict[str, Any]) -> dict[str, float]:
        centred, weights, total = self._centred(batch)
        values = basis.evaluate(batch["points"])[0]
        reference = basis.reference.values(batch["points"])
        in_span = (centred * weights) @ reference  # coefficients on the reference basis
        span_eigenvalues = torch.linalg.eigvalsh(in_span.T @ in_span / len(centred)).flip(0)
        singular = torch.linalg.svdvals(centred * weights.sqrt())
        captured = float(self.share(values, batch))
        best = float(span_eigenvalues[: self.k].sum() / total)
        return {
            "captured_variance": captured,
            "best_in_span_variance": best,
            "grid_pca_variance": float((singular[: self.k] ** 2).sum() / len(centred) / total),
            "reference_variance": float(self.share(reference, batch)),
            "variance_ratio": captured / best,
        }


class RayleighQuotient:
    """Eigenfunctions of the self-adjoint operator L u = -div(p grad u) + q u: minimize
    sum_{j<=k} (k + 1 - j) R_j, R_j = <phi_j, L phi_j> = int p |grad phi_j|^2 + q phi_j^2 (weak form,
    by quadrature). Over orthonormal bases the minimum of a sum with strictly decreasing weights is
    reached by the first k eigenfunctions in order, R_j = lambda_j (Ky Fan / rearrangement), so no
    ordering constraint is needed. The batch gives p (`stiffness`), q (`potential`) and the
    reference `eigenvalues`.

    Reported on each test grid: `rayleigh_<j>` and `eigenvalue_<j>` (reference) for j <= k,
    `eigenvalue_rel_error`, max_j |R_j - lambda_j| / |lambda_j|; `ritz_rel_error`, the same for the
    Rayleigh-Ritz values of the reference span (the best the span allows); and
    `reference_rel_error`, the same for the first k reference functions themselves.

    Args:
        k: Number of leading eigenfunctions sought.
    """

    def __init__(self, k: PositiveInt = 1) -> None:
        _check_k(k)
        self.k = k

    def quotients(self, values: Tensor, grads: Tensor, batch: dict[str, Any]) -> Tensor:
        """R_j for every column of (values (n, M), grads (n, M, dim))."""
        weights = batch["weights"]
        kinetic = torch.einsum("n,nmd->m", weights * batch["stiffness"], grads**2)
        return kinetic + (weights * batch["potential"]) @ values**2

    def loss(self, basis: Any, batch: dict[str, Any]) -> Tensor:
        """sum_j (k + 1 - j) R_j over the first k functions, divided by sum_j (k + 1 - j)."""
        values, grads = basis.evaluate(batch["points"], derivatives=True)
        quotients = self.quotients(values, grads, batch)[: self.k]
        weights = torch.arange(self.k, 0, -1, dtype=quotients.dtype, device=quotients.device)
        return (weights * quotients).sum() / weights.sum()

    def report(self, basis: Any, batch: dict[str, Any]) -> dict[str, float]:
        exact = batch["eigenvalues"][: self.k]
        if len(exact) < self.k:
            raise ValueError(f"the data gives {len(batch['eigenvalues'])} reference eigenvalues, fewer than k = {self.k}")
        values, grads = basis.evaluate(batch["points"], derivatives=True)
        learned = self.quotients(values, grads, batch)[: self.k]
        ref_values, ref_grads = basis.reference.evaluate(batch["points"], derivatives=True)
        reference = self.quotients(ref_values, ref_grads, batch)[: self.k]
        galerkin = galerkin_matrix(basis.reference, batch["points"], batch["weights"], batch["stiffness"], batch["potential"])
        ritz = torch.linalg.eigvalsh(galerkin)[: self.k]

        def rel_error(approx: Tensor) -> float:
            return float(((approx - exact).abs() / exact.abs()).max())

        out = {"eigenvalue_rel_error": rel_error(learned), "ritz_rel_error": rel_error(ritz),
               "reference_rel_error": rel_error(reference)}
        for j in range(self.k):
            out[f"rayleigh_{j + 1}"], out[f"eigenvalue_{j + 1}"] = float(learned[j]), float(exact[j])
        return out
