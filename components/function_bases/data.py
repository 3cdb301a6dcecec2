"""Data for basis learning on the torus [0, 1)^dim: a functional dataset (samples of a
non-stationary Gaussian process) and a variable-coefficient Sturm-Liouville operator.

Both are data modules whose batches are dicts on a uniform grid: `points` (n, dim), `weights`
(n,) (quadrature), `name` ("n<points per axis>", the suffix of the task's test metrics), plus the
data (`functions` (B, n), or the operator's `stiffness` p, `potential` q and reference
`eigenvalues`). Training repeats one full batch `train_steps` times (full-batch optimization,
one epoch); test gives one batch per resolution in `test_points`, drawn from the same functions or
operator, so a basis trained on one grid is checked on finer ones.
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import numpy as np
import scipy.linalg
import torch
from torch.utils.data import DataLoader, Dataset

from components.function_bases.bases import FourierBasis, periodic_grid
from components.types import PositiveInt


class _Repeat(Dataset):
    def __init__(self, batches: list[dict[str, Any]], times: int = 1) -> None:
        self.batches, self.times = batches, times

    def __len__(self) -> int:
        return len(self.batches) * self.times

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.batches[index % len(self.batches)]


def _loader(batches: list[dict[str, Any]], times: int = 1) -> DataLoader:
    return DataLoader(_Repeat(batches, times), batch_size=None, shuffle=False)


def _check_grids(points: int, test_points: list[int], train_steps: int, dim: int) -> None:
    if dim not in (1, 2):
        raise ValueError(f"dim must be 1 or 2, got {dim}")
    if points < 2 or any(p < 2 for p in test_points):
        raise ValueError(f"points and test_points must be >= 2, got {points} and {test_points}")
    if len(set(test_points)) != len(test_points) or not test_points:
        raise ValueError(f"test_points must be distinct grid sizes, at least one, got {test_points}")
    if train_steps < 1:
        raise ValueError(f"train_steps must be >= 1, got {train_steps}")


def warp(x: torch.Tensor, strength: float) -> torch.Tensor:
    """u(x) = x + strength / (2 pi) sin(2 pi x): a smooth periodic change of variable of the circle
    (monotone for |strength| < 1)."""
    return x + strength / (2 * math.pi) * torch.sin(2 * math.pi * x)


class GaussianProcessFunctions(L.LightningDataModule):
    """Samples f(x) = s(x) g(u(x)) of a non-stationary Gaussian process on the torus [0, 1)^dim.

    g is a stationary periodic GP, a random Fourier series: each real Fourier function of frequency
    vector k (|k_d| <= max_frequency) gets an independent N(0, 1) coefficient times
    exp(-(pi length_scale |k|)^2), the squared-exponential spectrum. u warps each axis
    (`warp(x, warp_strength)`), s(x) = 1 + modulation cos(2 pi x_1) modulates the amplitude: the
    covariance is neither stationary nor band-limited, so its principal components are not Fourier
    functions and not inside a finite Fourier span. A sample is a function: its coefficients are
    drawn once and evaluated on every grid, so the test functions at different resolutions are the
    same functions.

    Args:
        num_samples: Training functions (one full batch).
        test_samples: Held-out functions, drawn after the training ones.
        points: Training grid points per axis.
        test_points: Grid sizes per axis of the test batches (one batch each).
        train_steps: Optimizer steps per epoch (the full batch repeated).
        dim: 1 or 2.
        length_scale: GP length scale.
        max_frequency: Highest frequency per axis of the series for g.
        warp_strength: Strength of the warp u (|.| < 1).
        modulation: Amplitude modulation of s (|.| < 1).
        seed: Seed of the coefficients (write `${seed}`: the run's seed redraws the data).
    """

    def __init__(
        self,
        num_samples: PositiveInt = 500,
        test_samples: PositiveInt = 500,
        points: int = 128,
        test_points: list[int] | None = None,
        train_steps: PositiveInt = 300,
        dim: PositiveInt = 1,
        length_scale: float = 0.08,
        max_frequency: int = 32,
        warp_strength: float = 0.6,
        modulation: float = 0.5,
        seed: int = 0,
    ) -> None:
        super().__init__()
        test_points = list(test_points or [points])
        _check_grids(points, test_points, train_steps, dim)
        if num_samples < 2 or test_samples < 2:
            raise ValueError(f"num_samples and test_samples must be >= 2, got {num_samples}, {test_samples}")
        if not abs(warp_strength) < 1 or not abs(modulation) < 1:
            raise ValueError(f"warp_strength and modulation must lie in (-1, 1), got {warp_strength}, {modulation}")
        if length_scale <= 0 or max_frequency < 1:
            raise ValueError(f"length_scale must be > 0 and max_frequency >= 1, got {length_scale}, {max_frequency}")
        self.points, self.test_points, self.train_steps, self.dim = points, test_points, train_steps, dim
        self.warp_strength, self.modulation = warp_strength, modulation
        self.series = FourierBasis(2 * max_frequency + 1, 1)  # per-axis functions of g
        k = torch.tensor([(i + 1) // 2 for i in range(2 * max_frequency + 1)], dtype=torch.float64)
        k2 = k[:, None] ** 2 + k[None, :] ** 2 if dim == 2 else k**2
        scale = torch.exp(-((math.pi * length_scale) ** 2) * k2)
        generator = torch.Generator().manual_seed(seed)
        shape = (num_samples + test_samples, *scale.shape)
        coefficients = torch.randn(shape, generator=generator, dtype=torch.float64) * scale
        # batches are made later, outside the build's default dtype: keep the one of construction
        self.dtype = dtype = torch.get_default_dtype()
        self.train_coefficients = coefficients[:num_samples].to(dtype)
        self.test_coefficients = coefficients[num_samples:].to(dtype)

    def sample(self, coefficients: torch.Tensor, points_per_side: int) -> dict[str, Any]:
        """A batch: the functions with these coefficients on the uniform grid of that size."""
        points, weights = periodic_grid(points_per_side, self.dim, self.dtype)
        axis = points[:: points_per_side ** (self.dim - 1), 0] if self.dim == 2 else points[:, 0]
        features = self.series.values(warp(axis, self.warp_strength)[:, None])  # (n_axis, P)
        if self.dim == 1:
            functions = coefficients @ features.T
        else:  # g on the grid: F C F^T per sample, first axis slowest as in periodic_grid
            functions = torch.einsum("ip,bpq,jq->bij", features, coefficients, features).reshape(len(coefficients), -1)
        functions = functions * (1 + self.modulation * torch.cos(2 * math.pi * points[:, 0]))
        return {"functions": functions, "points": points, "weights": weights, "name": f"n{points_per_side}"}

    def train_dataloader(self) -> DataLoader:
        return _loader([self.sample(self.train_coefficients, self.points)], self.train_steps)

    def test_dataloader(self) -> DataLoader:
        return _loader([self.sample(self.test_coefficients, n) for n in self.test_points])


def sturm_liouville_coefficients(points: torch.Tensor, stiffness_modulation: float,
                                 potential_depth: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(p, q) at points (n, dim): p(x) = 1 + stiffness_modulation sin(2 pi x_1), and the potential
    well q(x) = potential_depth * sum_d (1 + cos(2 pi x_d)), deepest at the centre (zero there)."""
    p = 1 + stiffness_modulation * torch.sin(2 * math.pi * points[:, 0])
    q = potential_depth * (1 + torch.cos(2 * math.pi * points)).sum(dim=1)
    return p, q


def galerkin_matrix(basis: FourierBasis, points: torch.Tensor, weights: torch.Tensor, p: torch.Tensor,
                    q: torch.Tensor) -> torch.Tensor:
    """K_mn = int p grad(phi_m) . grad(phi_n) + q phi_m phi_n by quadrature: the weak form of
    L = -div(p grad) + q on the span of `basis` (its eigenvalues are the Rayleigh-Ritz values)."""
    values, grads = basis.evaluate(points, derivatives=True)
    stiffness = torch.einsum("n,nmd,nkd->mk", weights * p, grads, grads)
    return stiffness + values.T @ ((weights * q)[:, None] * values)


def reference_eigenvalues(count: int, dim: int, stiffness_modulation: float, potential_depth: float,
                          max_frequency: int) -> np.ndarray:
    """The `count` smallest eigenvalues of L = -div(p grad) + q on the torus, by Fourier-Galerkin
    with every frequency up to `max_frequency` per axis, in float64 with scipy's eigh. p and q have
    frequency 1, so a grid of 4 max_frequency + 4 points per axis integrates the matrix exactly; the
    error is the truncation's, spectrally small for these smooth coefficients (2D: the disk of the
    (2 max_frequency + 1)^2 lowest frequencies)."""
    basis = FourierBasis((2 * max_frequency + 1) ** dim, dim)  # in 2D the lowest |k| first, a disk
    n = 4 * basis.max_frequency + 4
    axis = torch.arange(n, dtype=torch.float64) / n
    points = torch.cartesian_prod(*[axis] * dim).reshape(-1, dim)
    weights = torch.full((len(points),), 1.0 / len(points), dtype=torch.float64)
    p, q = sturm_liouville_coefficients(points, stiffness_modulation, potential_depth)
    matrix = galerkin_matrix(basis, points, weights, p, q).numpy()
    return scipy.linalg.eigh(matrix, eigvals_only=True, subset_by_index=[0, count - 1])


class SturmLiouville(L.LightningDataModule):
    """The self-adjoint operator L u = -div(p grad u) + q u on the torus [0, 1)^dim (periodic
    variable-coefficient Sturm-Liouville in 1D), sampled on grids, with its reference eigenvalues.

    p(x) = 1 + stiffness_modulation sin(2 pi x_1) > 0 and q(x) = potential_depth sum_d (1 + cos(2 pi
    x_d)) (a well at the centre): the low eigenfunctions are localized, not Fourier functions.
    Batches carry `stiffness` (p), `potential` (q) on the grid and `eigenvalues` (the
    `eigenvalues` smallest, from a Fourier-Galerkin solve with `reference_frequency` frequencies per
    axis; see `reference_eigenvalues`).

    Args:
        points: Training grid points per axis.
        test_points: Grid sizes per axis of the test batches.
        train_steps: Optimizer steps (the one batch repeated).
        dim: 1 or 2.
        stiffness_modulation: Amplitude of p's variation (|.| < 1 keeps p > 0).
        potential_depth: Depth scale of the well q.
        eigenvalues: How many reference eigenvalues to compute.
        reference_frequency: Highest frequency per axis of the reference solve.
    """

    def __init__(
        self,
        points: int = 128,
        test_points: list[int] | None = None,
        train_steps: PositiveInt = 300,
        dim: PositiveInt = 1,
        stiffness_modulation: float = 0.5,
        potential_depth: float = 100.0,
        eigenvalues: int = 5,
        reference_frequency: int = 64,
    ) -> None:
        super().__init__()
        test_points = list(test_points or [points])
        _check_grids(points, test_points, train_steps, dim)
        if not abs(stiffness_modulation) < 1:
            raise ValueError(f"stiffness_modulation must lie in (-1, 1), got {stiffness_modulation}")
        if eigenvalues < 1 or reference_frequency < 1:
            raise ValueError(f"eigenvalues and reference_frequency must be >= 1, got {eigenvalues}, {reference_frequency}")
        self.points, self.test_points, self.train_steps, self.dim = points, test_points, train_steps, dim
        self.stiffness_modulation, self.potential_depth = stiffness_modulation, potential_depth
        values = reference_eigenvalues(eigenvalues, dim, stiffness_modulation, potential_depth, reference_frequency)
        self.dtype = torch.get_default_dtype()  # batches are made later, outside the build's default dtype
        self.eigenvalues = torch.as_tensor(values, dtype=self.dtype)

    def batch(self, points_per_side: int) -> dict[str, Any]:
        """The operator on the uniform grid of that size."""
        points, weights = periodic_grid(points_per_side, self.dim, self.dtype)
        p, q = sturm_liouville_coefficients(points, self.stiffness_modulation, self.potential_depth)
        return {"points": points, "weights": weights, "stiffness": p, "potential": q,
                "eigenvalues": self.eigenvalues, "name": f"n{points_per_side}"}

    def train_dataloader(self) -> DataLoader:
        return _loader([self.batch(self.points)], self.train_steps)

    def test_dataloader(self) -> DataLoader:
        return _loader([self.batch(n) for n in self.test_points])
