"""Reference bases and grids on the torus [0, 1)^dim (dim 1 or 2).

A basis here is a set of functions, not a matrix: `values(points)` evaluates them at any points,
so the same basis is used at any resolution. Orthonormality is in L2([0, 1)^dim); on a uniform grid
of n points per axis the quadrature (equal weights 1/n^dim, the periodic trapezoid rule) is exact
for trigonometric polynomials of degree < n per axis, so the Fourier basis below is orthonormal on
such a grid to round-off when its highest frequency is below n / 2.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from components.types import PositiveInt


def periodic_grid(points_per_side: int, dim: int = 1, dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """(points, weights): the uniform grid j / n on each axis of [0, 1)^dim, points of shape
    (n^dim, dim) with the first axis varying slowest, and equal quadrature weights 1 / n^dim;
    in `dtype` (default: torch's default dtype)."""
    if points_per_side < 1:
        raise ValueError(f"points_per_side must be >= 1, got {points_per_side}")
    if dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2, got {dim}")
    axis = torch.arange(points_per_side, dtype=torch.float64) / points_per_side
    points = torch.cartesian_prod(*[axis] * dim).reshape(-1, dim)
    weights = torch.full((points.shape[0],), 1.0 / points.shape[0], dtype=torch.float64)
    dtype = dtype or torch.get_default_dtype()
    return points.to(dtype), weights.to(dtype)


def axis_frequency(index: int) -> int:
    """Frequency of the 1D real Fourier function number `index`: 0 for the constant, then k for the
    pair cos(2 pi k x), sin(2 pi k x) at indices 2k - 1, 2k."""
    return (index + 1) // 2


def fourier_1d(x: Tensor, count: int) -> tuple[Tensor, Tensor]:
    """(values, derivatives) of the first `count` real Fourier functions at x (shape (n,)), each of
    shape (n, count): 1, sqrt(2) cos(2 pi k x), sqrt(2) sin(2 pi k x) for k = 1, 2, ...; orthonormal in
    L2([0, 1))."""
    k = torch.tensor([axis_frequency(i) for i in range(count)], dtype=x.dtype, device=x.device)
    is_sin = torch.tensor([i > 0 and i % 2 == 0 for i in range(count)], device=x.device)
    phase = 2 * math.pi * x[:, None] * k
    root2 = math.sqrt(2.0)
    cos, sin = torch.cos(phase), torch.sin(phase)
    values = torch.where(is_sin, root2 * sin, root2 * cos)
    values[:, 0] = 1.0
    omega = 2 * math.pi * k
    derivatives = torch.where(is_sin, root2 * omega * cos, -root2 * omega * sin)
    derivatives[:, 0] = 0.0
    return values, derivatives


class FourierBasis(nn.Module):
    """The real Fourier basis of L2 on the torus [0, 1)^dim, lowest frequencies first.

    In 1D: 1, sqrt(2) cos(2 pi x), sqrt(2) sin(2 pi x), sqrt(2) cos(4 pi x), ... (`size` of them; an
    odd size keeps cos/sin pairs whole). In 2D: products phi_i(x1) phi_j(x2) of the 1D functions,
    ordered by |k|^2 = k_i^2 + k_j^2 and then by (i, j). Orthonormal on a uniform grid of n points
    per axis when every frequency used is below n / 2 (`max_frequency`).

    Args:
        size: Number of functions M.
        dim: Dimension of the torus, 1 or 2.
    """

    def __init__(self, size: PositiveInt = 33, dim: PositiveInt = 1) -> None:
        super().__init__()
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if dim not in (1, 2):
            raise ValueError(f"dim must be 1 or 2, got {dim}")
        self.size, self.dim = size, dim
        if dim == 1:
            self.pairs = [(i,) for i in range(size)]
        else:
            # the first `size` lattice points by |k| lie within |k_d| <= sqrt(size) + 1 per axis
            side = 2 * (math.isqrt(size) + 2) + 1
            candidates = [(i, j) for i in range(side) for j in range(side)]
            candidates.sort(key=lambda ij: (axis_frequency(ij[0]) ** 2 + axis_frequency(ij[1]) ** 2, ij))
            self.pairs = candidates[:size]
        self.axis_count = 1 + max(max(p) for p in self.pairs)
        self.max_frequency = max(axis_frequency(i) for p in self.pairs for i in p)

    def evaluate(self, points: Tensor, derivatives: bool = False) -> tuple[Tensor, Tensor | None]:
        """(values (n, M), gradients (n, M, dim) or None) at points of shape (n, dim)."""
        if points.ndim != 2 or points.shape[1] != self.dim:
            raise ValueError(f"points must have shape (n, {self.dim}), got {tuple(points.shape)}")
        axes = [fourier_1d(points[:, d], self.axis_count) for d in range(self.dim)]
        index = [torch.tensor([p[d] for p in self.pairs], device=points.device) for d in range(self.dim)]
        factors = [v[:, index[d]] for d, (v, _) in enumerate(axes)]
        values = factors[0] if self.dim == 1 else factors[0] * factors[1]
        if not derivatives:
            return values, None
        slopes = [g[:, index[d]] for d, (_, g) in enumerate(axes)]
        if self.dim == 1:
            return values, slopes[0][:, :, None]
        return values, torch.stack([slopes[0] * factors[1], factors[0] * slopes[1]], dim=-1)

    def values(self, points: Tensor) -> Tensor:
        """The M functions at points (n, dim): shape (n, M)."""
        return self.evaluate(points)[0]
