"""Differentiable soft ranks: Euclidean projection onto the permutahedron, O(B log B).

Blondel, Teboul, Berthet, Djolonga, "Fast differentiable sorting and ranking", ICML 2020
(arXiv:2002.08871), section 4-5, quadratic regularization Q. Used by the CvM dependence penalty of
"group fairness via the Cramer-von-Mises sensitivity index", NeurIPS 2026 (see
specs/cvm_fairness/README.md).

With ``rho = (B, B-1, ..., 1)`` and strength ``eps``, the soft rank of ``theta`` is

    r(theta) = argmin_{mu in conv{permutations of rho}} 1/2 ||mu - theta / eps||^2,

so that the largest entry gets rank ~B and the smallest ~1 (ascending ranks). As ``eps -> 0`` it
equals the hard ranks; as ``eps -> inf`` every rank tends to (B + 1) / 2; the ranks always sum to
B (B + 1) / 2. The projection reduces to one sort and one isotonic regression (Blondel et al.,
Prop. 3): with ``sigma`` sorting ``z = theta / eps`` in decreasing order and ``s = z[sigma]``,

    v = argmin_{v_1 >= ... >= v_B} 1/2 ||v - (s - rho)||^2   (pool adjacent violators, O(B)),
    r[sigma] = s - v.

``v`` is constant on blocks, each the mean of ``s - rho`` over the block, so the Jacobian is exact
and cheap (Blondel et al., Lemma 3): ``dr/dz = I - P^T A P`` where ``A`` averages within blocks.
The backward pass applies it in O(B) after the forward sort. PAV runs on the CPU in float64 through
`scipy.optimize.isotonic_regression` (a compiled PAV that also returns the blocks); scipy comes
with scikit-learn.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
from scipy.optimize import isotonic_regression
from torch import Tensor


def _pav_decreasing(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-increasing isotonic fit of each row of ``y`` (N, B): the fit and the block id of each entry."""
    fit = np.empty_like(y)
    block_id = np.empty(y.shape, dtype=np.int64)
    for row in range(y.shape[0]):
        result = isotonic_regression(y[row], increasing=False)
        fit[row] = result.x
        sizes = np.diff(result.blocks)
        block_id[row] = np.repeat(np.arange(len(sizes)), sizes)
    return fit, block_id


class _SoftRankL2(torch.autograd.Function):
    """Projection of ``z`` (N, B) onto the permutahedron of (B, ..., 1), with the block-average backward."""

    @staticmethod
    def forward(ctx: Any, z: Tensor) -> Tensor:  # type: ignore[override]
        n_rows, size = z.shape
        order = torch.argsort(z.detach(), dim=-1, descending=True, stable=True)
        s = torch.gather(z.detach(), -1, order)
        rho = torch.arange(size, 0, -1, dtype=torch.float64)
        s64 = s.to(device="cpu", dtype=torch.float64).numpy()
        fit, block_id = _pav_decreasing(s64 - rho.numpy())
        ranks_sorted = torch.from_numpy(s64 - fit).to(device=z.device, dtype=z.dtype)
        ranks = torch.empty_like(ranks_sorted).scatter_(-1, order, ranks_sorted)
        # Global block ids (offset per row) so that one index_add averages every block of every row.
        global_id = torch.from_numpy(block_id).to(z.device) + size * torch.arange(n_rows, device=z.device)[:, None]
        counts = torch.zeros(n_rows * size, dtype=z.dtype, device=z.device)
        counts.index_add_(0, global_id.reshape(-1), torch.ones(n_rows * size, dtype=z.dtype, device=z.device))
        ctx.save_for_backward(order, global_id, counts)
        return ranks

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> Tensor:  # type: ignore[override]
        order, global_id, counts = ctx.saved_tensors
        g_sorted = torch.gather(grad_output, -1, order)
        flat_id = global_id.reshape(-1)
        sums = torch.zeros_like(counts).index_add_(0, flat_id, g_sorted.reshape(-1))
        block_mean = (sums / counts.clamp_min(1))[flat_id].reshape(g_sorted.shape)
        return torch.zeros_like(grad_output).scatter_(-1, order, g_sorted - block_mean)


def soft_rank(
    values: Tensor,
    regularization_strength: float = 1.0,
    regularization: Literal["l2"] = "l2",
) -> Tensor:
    """Soft ascending ranks (1 = smallest) of `values` along the last dimension.

    Args:
        values: Scores, shape (B,) or (N, B); each row is ranked separately.
        regularization_strength: ``eps`` > 0; smaller is closer to the hard ranks. It is in the
            units of `values`: entries closer than about ``eps`` share their rank.
        regularization: Only "l2" (Blondel et al.'s quadratic regularizer Q) is implemented.

    Returns:
        Ranks with the shape and dtype of `values`, differentiable with the exact Jacobian.
    """
    if regularization != "l2":
        raise ValueError(f"regularization must be 'l2', got {regularization!r}")
    if not regularization_strength > 0:
        raise ValueError(f"regularization_strength must be > 0, got {regularization_strength}")
    if values.ndim not in (1, 2):
        raise ValueError(f"values must have shape (B,) or (N, B), got {tuple(values.shape)}")
    if values.shape[-1] == 0:
        return values.clone()
    rows = values.reshape(-1, values.shape[-1])
    ranks = _SoftRankL2.apply(rows / regularization_strength)
    return ranks.reshape(values.shape)


def hard_rank(values: Tensor) -> Tensor:
    """Ascending ranks 1..B along the last dimension (ties broken by position), as floats."""
    order = torch.argsort(values, dim=-1, stable=True)
    positions = torch.arange(1, values.shape[-1] + 1, dtype=values.dtype, device=values.device)
    return torch.empty_like(values).scatter_(-1, order, positions.expand_as(values).contiguous())
