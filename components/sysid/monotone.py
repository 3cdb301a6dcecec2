"""Monotone systems and Max-Monotone barrier networks (monotone_barrier).

Paper: "Monotone Neural Barrier Certificates" (monotone_barrier, NeurIPS 2026; abstract in
specs/monotone_barrier/README.md). A discrete-time system x+ = f(x) on the box X = [0, U]^n is
*monotone* when x <= y (componentwise) implies f(x) <= f(y). The safety problem: from the initial
set X0 = [0, a]^n (lower-closed) the state never enters the unsafe set Xu = {x : max_i x_i >= u}
(upper-closed). A barrier is B: X -> R with B <= 0 on X0, B > 0 on Xu, and inductive: B(x) <= 0
implies B(f(x)) <= 0 (and f(X) inside X); then S = {B <= 0} holds X0, avoids Xu and is invariant.

Systems (`monotone_systems` kind): a black-box simulator `step(x)` on batches (B, n) of states, with
`dim`, `high` (U), `init_high` (a) and `unsafe_low` (u). `FreewayCTM` is a freeway of n cells under
the cell transmission model, with on- and off-ramps (the paper's freeway benchmark, our constants).

Max-Monotone network (`MaxMonotone`): B(x) = max_i psi_i(x_i), each psi_i a one-hidden-layer
network of one input, psi_i(t) = b_i + sum_h softplus(V_ih) tanh(softplus(W_ih) t / U + A_ih):
non-negative weights through softplus and an increasing activation make every psi_i increasing,
and a max of increasing functions is increasing, so B is monotone by construction. With
`monotone=False` (the control) the same parameters are used raw (V, W unconstrained): same size,
no guarantee. Deviation: the paper's Max-Monotone networks are universal for monotone functions
(pieces that mix coordinates); ours are a max over per-coordinate pieces, whose 0-sublevel set is
a box [0, c_1] x ... x [0, c_n] -- the structure that makes the boundary check below local.

Why checking cell corners is sound (the verifier, `verify_cells`). Partition every axis [0, U]
into r cells of width U / r (the grid g_0 = 0 < ... < g_r = U). For a monotone B, the sublevel
set S = {B <= 0} is lower-closed (x <= y in S gives x in S).
1. Init: for x in X0, x <= a 1, so B(x) <= B(a 1): one evaluation of B (no simulator query).
2. Unsafe: x in Xu has x_i >= u for some i, so x >= u e_i and B(x) >= B(u e_i): n evaluations.
3. Inductive, by cells: let C = [l, h] be a grid cell with B(l) <= 0 (one that can meet S). For
   x in C, x <= h, and f monotone gives f(x) <= f(h), so B(f(x)) <= B(f(h)): one simulator query
   at the cell's upper corner h decides the whole cell. Cells with B(l) > 0 hold no point of S
   (x in C has x >= l, B(x) >= B(l) > 0) and need no query. Moreover only *maximal* cells need a
   query: if C <= C' (C' is C shifted up along the grid) and both can meet S, f(h) <= f(h') covers
   C by C'. Every x in S lies in a cell C0 with B(l_C0) <= B(x) <= 0, and walking up through cells
   that can meet S ends at a maximal one C >= C0, so S is covered by {x <= h_C : C maximal}, and
   B(f(h_C)) <= 0 for every maximal C proves f(S) inside S. The maximal cells lie on the upper
   boundary of S (a localized boundary check). For the per-coordinate network S is a box, so
   exactly one cell is maximal: the one whose lower corner has, on each axis i, the last grid
   point with psi_i <= 0: ONE query per verification, whatever n.
   The simulator must map X into X (FreewayCTM clips to [0, U]); B is evaluated in float64.
   A failing corner is a counterexample to the candidate (added to the training data, the
   refinement step); a genuine violation when B(h) <= 0 as well.
4. Monotonicity of B is part of the certificate (the argument above needs it): the verifier checks
   it structurally (every effective weight >= 0); the unconstrained control fails there.

The dense-grid baseline (`dense_cells`) does the same job with the same cells and the same corner
argument, but without the order structure across cells: it queries the upper corner of every grid
cell that can meet S, prod_i (k_i + 1) cells for a box with k_i + 1 cells per axis: exponential in n.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from components.types import OpenFraction, PositiveFloat, PositiveInt


class FreewayCTM:
    """A freeway of `dim` cells under the cell transmission model (Daganzo 1994), with an on-ramp
    and an off-ramp at every cell; densities in [0, 1] (the jam density is 1).

    Cell i sends min(v x_i, F) and receives min(F, w (1 - x_i)); the flow from cell i to i + 1 is
    phi_i = min(v x_i, F, w (1 - x_{i+1}) / (1 - beta_i)), of which the fraction 1 - beta_i enters
    cell i + 1 (beta_i leaves by the off-ramp); the last cell discharges min(v x_n, F); the upstream
    demand d_0 and each on-ramp's demand d_i enter as far as the cell receives. With time step k
    (per cell length) x_i+ = clip(x_i + k (in_i + ramp_i - phi_i), 0, 1). Monotone when
    k (v + 2 w) <= 1 (every term is nondecreasing in x_{i-1}, x_{i+1}, and x_i's own coefficient
    is >= 1 - k v - 2 k w); checked at construction. Unsafe: a density at or above the critical
    density F / v (congestion) anywhere; initial set: every density <= `init_high`.

    Args:
        dim: Number of cells n.
        free_speed, wave_speed, capacity: v, w and F (critical density F / v).
        time_step: k, the time step over the cell length.
        exit_low, exit_high: Each off-ramp's split ratio beta_i, uniform in this range (per seed).
        ramp_low, ramp_high: Each on-ramp's demand d_i, uniform in this range (per seed).
        upstream: The demand d_0 entering the first cell.
        init_high: a, the initial set's upper corner (a 1).
        seed: Draws the ramps.
    """

    def __init__(self, dim: PositiveInt, free_speed: PositiveFloat = 1.0, wave_speed: PositiveFloat = 1 / 3,
                 capacity: PositiveFloat = 0.25, time_step: PositiveFloat = 0.5,
                 exit_low: OpenFraction = 0.2, exit_high: OpenFraction = 0.3,
                 ramp_low: float = 0.002, ramp_high: float = 0.006, upstream: float = 0.02,
                 init_high: PositiveFloat = 0.05, seed: int = 0) -> None:
        if time_step * (free_speed + 2 * wave_speed) > 1:
            raise ValueError(f"time_step * (free_speed + 2 wave_speed) must be <= 1 for a monotone "
                             f"model, got {time_step * (free_speed + 2 * wave_speed):.3g}")
        if not (0 < exit_low <= exit_high < 1 and 0 <= ramp_low <= ramp_high):
            raise ValueError("need 0 < exit_low <= exit_high < 1 and 0 <= ramp_low <= ramp_high")
        if not init_high < capacity / free_speed <= 1:
            raise ValueError("need init_high < the critical density capacity / free_speed <= 1")
        rng = np.random.default_rng(seed)
        self.dim, self.high = dim, 1.0
        self.init_high, self.unsafe_low = float(init_high), capacity / free_speed
        self.v, self.w, self.cap, self.k, self.upstream = free_speed, wave_speed, capacity, time_step, upstream
        self.beta = rng.uniform(exit_low, exit_high, dim)
        self.ramp = rng.uniform(ramp_low, ramp_high, dim)

    def step(self, x: np.ndarray) -> np.ndarray:
        """One step of every state of a batch (B, n) -> (B, n) (float64)."""
        x = np.asarray(x, dtype=np.float64)
        receive = np.minimum(self.cap, self.w * (1.0 - x))
        send = np.minimum(self.v * x, self.cap)
        phi = send.copy()
        phi[:, :-1] = np.minimum(send[:, :-1], receive[:, 1:] / (1.0 - self.beta[:-1]))
        inflow = np.empty_like(x)
        inflow[:, 0] = np.minimum(self.upstream, receive[:, 0])
        inflow[:, 1:] = (1.0 - self.beta[:-1]) * phi[:, :-1]
        ramp = np.minimum(self.ramp, receive)
        return np.clip(x + self.k * (inflow + ramp - phi), 0.0, self.high)


class MaxMonotone(nn.Module):
    """B(x) = max_i psi_i(x_i), psi_i(t) = b_i + sum_h V_ih tanh(W_ih t / U + A_ih) with V, W the
    softplus of raw parameters (monotone) or the raw parameters themselves (`monotone=False`).
    Float64. `pieces(t)` gives psi on a (B, n) batch; `forward(x)` B on (B, n)."""

    def __init__(self, dim: int, hidden: int, high: float, monotone: bool = True,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        kw = {"dtype": torch.float64}
        self.monotone, self.high = monotone, high
        self.raw_w = nn.Parameter(torch.randn(dim, hidden, generator=generator, **kw) + 1.0)
        self.raw_v = nn.Parameter(0.5 * torch.randn(dim, hidden, generator=generator, **kw) - 1.0)
        self.a = nn.Parameter(2.0 * torch.rand(dim, hidden, generator=generator, **kw) - 1.0)
        self.b = nn.Parameter(0.1 * torch.randn(dim, generator=generator, **kw))

    def weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.monotone:
            return nn.functional.softplus(self.raw_w), nn.functional.softplus(self.raw_v)
        return self.raw_w, self.raw_v

    def pieces(self, x: torch.Tensor) -> torch.Tensor:
        w, v = self.weights()
        hidden = torch.tanh(x[..., None] / self.high * w + self.a)
        return (hidden * v).sum(-1) + self.b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pieces(x).amax(-1)

    def is_monotone(self) -> bool:
        """The structural check: every effective weight >= 0 (sufficient for increasing pieces)."""
        w, v = self.weights()
        return bool((w >= 0).all() and (v >= 0).all())


def axis_levels(net: MaxMonotone, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Per axis, the grid's psi values: (grid (r+1,), psi (r+1, n)) for r = `cells`."""
    grid = torch.linspace(0.0, net.high, cells + 1, dtype=torch.float64)
    with torch.no_grad():
        psi = net.pieces(grid[:, None].expand(-1, net.raw_w.shape[0]))
    return grid.numpy(), psi.numpy()


def cover_cell(net: MaxMonotone, cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The maximal cell of the box S (module docstring, 3.): (lower, upper, k) with k_i the index of
    the last grid point on axis i whose psi_i <= 0 (psi_i increasing); None when S is empty (some
    psi_i(0) > 0). For a non-monotone psi this is the corner check as if it were monotone."""
    grid, psi = axis_levels(net, cells)
    inside = psi <= 0
    if not inside[0].all():
        return None
    k = np.where(inside.all(0), cells, inside.argmin(0) - 1)  # last index before the first psi > 0
    lower = grid[k]
    upper = grid[np.minimum(k + 1, cells)]
    return lower, upper, k


def dense_cells(k: np.ndarray, cells: int, limit: int) -> tuple[int, np.ndarray | None]:
    """The dense grid's cells that can meet the box S, given the per-axis last index k: there are
    prod_i (k_i + 1) (k_i < r; an axis whose whole range is inside S has r cells). Returns the count
    and, when it is <= `limit`, their upper corners' grid indices (count, n); else None."""
    per_axis = np.minimum(k + 1, cells)
    count = math.prod(int(c) for c in per_axis)
    if count > limit:
        return count, None
    axes = [np.arange(1, c + 1) for c in per_axis]
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))
    return count, mesh
