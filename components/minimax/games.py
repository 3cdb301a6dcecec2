"""Stochastic constrained convex-concave games min_x max_y f(x, y) with an exact primal-dual gap.

Paper: "Last-iterate convergence of perturbed stochastic extragradient / optimistic GDA in
constrained monotone games" (perturbed_eg, NeurIPS 2026; specs/perturbed_eg/README.md). Its
setting: a constrained convex-concave problem accessed through an unbiased noisy gradient oracle,
convergence measured by the primal-dual gap of the last iterate.

Each game (registry table `problems`) is an ``nn.Module`` (its matrices are float64 buffers, so
they follow the task to its device and into checkpoints) with the interface the `minimax` task
and the algorithms in `components.minimax.algorithms` use; every method is batched over leading dimensions of x and y
(independent replicates):

- ``dim_x``, ``dim_y``: sizes of the two players' variables (``dim`` is ``dim_x``).
- ``project_x(x)``, ``project_y(y)``: Euclidean projection onto the constraint sets X and Y.
- ``grad(x, y, generator) -> (gx, gy)``: the noisy oracle, gx = grad_x f + sigma * N(0, I) and
  gy = grad_y f + sigma * N(0, I), independent noise per call; ``exact_grad`` without the noise.
- ``gap(x, y)``: max_{y' in Y} f(x, y') - min_{x' in X} f(x', y), in closed form (>= 0, and 0
  exactly at a saddle point).
- ``center()``: the center of X x Y (the default anchor of the perturbed algorithms);
  ``sample(batch, generator)``: random feasible points; ``saddle``: the planted saddle point.
- ``forward(x, y)``: the objective value f(x, y).

The saddle point is planted: a seeded point (x*, y*) in the interior of X x Y, and linear terms
chosen so that it is a stationary point of f, hence a saddle; ``saddle_radius`` sets how far it
lies from the center (0: the center, which is also where the perturbation anchors, so the
regularization would cost no bias; > 0 makes the bias real).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import torch
from annotated_types import Interval
from torch import nn
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt, Probability, ProperFraction

# The smallest singular value of the coupling matrix, relative to the largest (1).
SingularValue = Annotated[float, Interval(gt=0, le=1)]

Constraint = Literal["box", "simplex", "ball"]


def project_box(v: torch.Tensor, radius: float) -> torch.Tensor:
    """Projection onto [-radius, radius]^d."""
    return v.clamp(-radius, radius)


def project_ball(v: torch.Tensor, radius: float) -> torch.Tensor:
    """Projection onto the Euclidean ball of the given radius (last dimension)."""
    norm = v.norm(dim=-1, keepdim=True)
    return v * torch.clamp(radius / norm.clamp_min(1e-300), max=1.0)


def project_simplex(v: torch.Tensor) -> torch.Tensor:
    """Projection onto the probability simplex (last dimension), by sorting (Held et al. 1974;
    Duchi et al. 2008): O(d log d)."""
    u, _ = torch.sort(v, dim=-1, descending=True)
    cumsum = u.cumsum(dim=-1) - 1.0
    index = torch.arange(1, v.shape[-1] + 1, device=v.device, dtype=v.dtype)
    positive = (u - cumsum / index) > 0
    rho = positive.to(v.dtype).cumsum(dim=-1).argmax(dim=-1, keepdim=True)  # last True
    theta = cumsum.gather(-1, rho) / (rho + 1).to(v.dtype)
    return (v - theta).clamp_min(0.0)


def random_matrix(rows: int, cols: int, min_singular_value: float, generator: torch.Generator) -> torch.Tensor:
    """U diag(s) V^T with Haar-random orthogonal U, V and singular values s evenly spaced from 1
    down to `min_singular_value`: operator norm 1 (so the gradient is 1-Lipschitz) and a
    conditioning the spec controls rather than the luck of a Gaussian draw."""
    k = min(rows, cols)
    u, _ = torch.linalg.qr(torch.randn(rows, k, generator=generator, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(cols, k, generator=generator, dtype=torch.float64))
    s = torch.linspace(1.0, min_singular_value, k, dtype=torch.float64) if k > 1 else torch.ones(1, dtype=torch.float64)
    return u @ torch.diag(s) @ v.T


class _Game(nn.Module):
    """Shared checks, constraint sets and the noisy oracle; subclasses define f and its gap."""

    constraint: Constraint

    def __init__(self, dim: int, dim_y: int | None, constraint: Constraint, radius: float, sigma: float,
                 saddle_radius: float, min_singular_value: float) -> None:
        super().__init__()
        dim_y = dim if dim_y is None else dim_y
        if constraint not in ("box", "simplex", "ball"):
            raise ValueError(f"constraint must be one of 'box', 'simplex', 'ball', got {constraint!r}")
        self.dim_x, self.dim_y = dim, dim_y
        self.constraint, self.radius, self.sigma = constraint, radius, sigma

    @property
    def dim(self) -> int:
        return self.dim_x

    # --- constraint sets -------------------------------------------------------------------
    def _project(self, v: torch.Tensor) -> torch.Tensor:
        if self.constraint == "box":
            return project_box(v, self.radius)
        if self.constraint == "ball":
            return project_ball(v, self.radius)
        return project_simplex(v)

    def project_x(self, x: torch.Tensor) -> torch.Tensor:
        return self._project(x)

    def project_y(self, y: torch.Tensor) -> torch.Tensor:
        return self._project(y)

    def _support(self, u: torch.Tensor) -> torch.Tensor:
        """h(u) = max over the constraint set of <u, v> (last dimension)."""
        if self.constraint == "box":
            return self.radius * u.abs().sum(-1)
        if self.constraint == "ball":
            return self.radius * u.norm(dim=-1)
        return u.max(dim=-1).values

    def _center(self, d: int) -> torch.Tensor:
        if self.constraint == "simplex":
            return torch.full((d,), 1.0 / d, dtype=torch.float64)
        return torch.zeros(d, dtype=torch.float64)

    def _interior_point(self, d: int, saddle_radius: float, generator: torch.Generator) -> torch.Tensor:
        """A seeded point at relative distance `saddle_radius` from the center, inside the set."""
        if self.constraint == "box":
            return saddle_radius * self.radius * (2 * torch.rand(d, generator=generator, dtype=torch.float64) - 1)
        if self.constraint == "ball":
            direction = torch.randn(d, generator=generator, dtype=torch.float64)
            return saddle_radius * self.radius * direction / direction.norm()
        vertex_mix = -torch.log(torch.rand(d, generator=generator, dtype=torch.float64))
        return (1 - saddle_radius) * self._center(d) + saddle_radius * vertex_mix / vertex_mix.sum()

    def center(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The center of X and of Y (on the game's device)."""
        device = self.A.device
        return self._center(self.dim_x).to(device), self._center(self.dim_y).to(device)

    @property
    def saddle(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The planted saddle point (x*, y*)."""
        return self.x_star, self.y_star

    def sample(self, batch: tuple[int, ...], generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Random feasible points of shape (*batch, dim_x) and (*batch, dim_y)."""
        out = []
        for d in (self.dim_x, self.dim_y):
            kwargs = dict(generator=generator, dtype=torch.float64, device=self.A.device)
            if self.constraint == "box":
                point = self.radius * (2 * torch.rand(*batch, d, **kwargs) - 1)
            elif self.constraint == "ball":
                direction = torch.randn(*batch, d, **kwargs)
                scale = torch.rand(*batch, 1, **kwargs) ** (1.0 / d)
                point = self.radius * scale * direction / direction.norm(dim=-1, keepdim=True)
            else:
                weights = -torch.log(torch.rand(*batch, d, **kwargs))
                point = weights / weights.sum(-1, keepdim=True)
            out.append(point)
        return out[0], out[1]

    # --- oracle ----------------------------------------------------------------------------
    def exact_grad(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def grad(self, x: torch.Tensor, y: torch.Tensor,
             generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Unbiased noisy gradients (grad_x f, grad_y f), each plus sigma * N(0, I)."""
        gx, gy = self.exact_grad(x, y)
        if self.sigma > 0:
            gx = gx + self.sigma * torch.randn(gx.shape, generator=generator, dtype=gx.dtype, device=gx.device)
            gy = gy + self.sigma * torch.randn(gy.shape, generator=generator, dtype=gy.dtype, device=gy.device)
        return gx, gy


class BilinearGame(_Game):
    """Stochastic constrained bilinear game f(x, y) = x^T A y + b^T x + c^T y, the paper's example
    on which the last iterates of vanilla S-EG and S-OGDA fail to converge under gradient noise.

    X and Y are boxes [-radius, radius]^d, Euclidean balls of that radius, or probability simplices
    (a matrix game). A has operator norm 1 (singular values evenly spaced from 1 down to
    `min_singular_value`), b = -A y* and c = -A^T x* plant the saddle (x*, y*). The gap is exact:
    b^T x + h_Y(A^T x + c) - c^T y + h_X(-(A y + b)), with h the support function of the set
    (radius * L1 norm for a box, radius * L2 norm for a ball, max for a simplex); for a box
    centered game (b = c = 0) it is radius * (||A^T x||_1 + ||A y||_1), NOTES.md's formula.

    Args:
        dim: Size of x.
        dim_y: Size of y (default: `dim`).
        constraint: "box", "ball" or "simplex", for both players.
        radius: Half-width of the box or radius of the ball (ignored for the simplex).
        sigma: Standard deviation of the oracle noise, per coordinate.
        saddle_radius: Relative distance in [0, 1) of the planted saddle from the set's center.
        min_singular_value: Smallest singular value of A (the largest is 1).
        seed: Seed of the game's construction (A and the saddle), independent of the run seed.
    """

    def __init__(
        self,
        dim: PositiveInt,
        dim_y: PositiveInt | None = None,
        constraint: Constraint = "box",
        radius: PositiveFloat = 1.0,
        sigma: NonNegativeFloat = 1.0,
        saddle_radius: ProperFraction = 0.0,
        min_singular_value: SingularValue = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__(dim, dim_y, constraint, radius, sigma, saddle_radius, min_singular_value)
        generator = torch.Generator().manual_seed(seed)
        A = random_matrix(self.dim_x, self.dim_y, min_singular_value, generator)
        x_star = self._interior_point(self.dim_x, saddle_radius, generator)
        y_star = self._interior_point(self.dim_y, saddle_radius, generator)
        self.register_buffer("A", A)
        self.register_buffer("b", -A @ y_star)
        self.register_buffer("c", -A.T @ x_star)
        self.register_buffer("x_star", x_star)
        self.register_buffer("y_star", y_star)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((x @ self.A) * y).sum(-1) + x @ self.b + y @ self.c

    def exact_grad(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return y @ self.A.T + self.b, x @ self.A + self.c

    def gap(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        best_response_y = x @ self.b + self._support(x @ self.A + self.c)
        best_response_x = y @ self.c - self._support(-(y @ self.A.T + self.b))
        return best_response_y - best_response_x


class QuadraticGame(_Game):
    """Convex-concave (not strongly) quadratic-bilinear game on boxes,
    f(x, y) = 1/2 x^T P x + x^T A y - 1/2 y^T Q y + b^T x + c^T y, with diagonal P, Q >= 0 that
    are zero on part of the coordinates, so f is only convex-concave and the perturbation of the
    paper is what makes it strongly so.

    P and Q equal `curvature` on the first ceil(curved_fraction * d) coordinates and 0 on the rest.
    A is as in `bilinear_game`; b = -P x* - A y*, c = Q y* - A^T x* plant the saddle (x*, y*).
    The gap is exact because the best responses separate per coordinate on a box: for
    u_j = (A^T x + c)_j, max over |y_j| <= r of u_j y_j - q_j y_j^2 / 2 is attained at
    clip(u_j / q_j, -r, r), or is r |u_j| when q_j = 0 (and symmetrically for x).

    Args:
        dim: Size of x.
        dim_y: Size of y (default: `dim`).
        radius: Half-width of the boxes.
        sigma: Standard deviation of the oracle noise, per coordinate.
        curvature: Diagonal value of P and Q on their curved coordinates (>= 0).
        curved_fraction: Share of coordinates with curvature, in [0, 1]; < 1 keeps f only
            convex-concave.
        saddle_radius: Relative distance in [0, 1) of the planted saddle from the center.
        min_singular_value: Smallest singular value of A (the largest is 1).
        seed: Seed of the game's construction, independent of the run seed.
    """

    def __init__(
        self,
        dim: PositiveInt,
        dim_y: PositiveInt | None = None,
        radius: PositiveFloat = 1.0,
        sigma: NonNegativeFloat = 1.0,
        curvature: NonNegativeFloat = 0.5,
        curved_fraction: Probability = 0.5,
        saddle_radius: ProperFraction = 0.5,
        min_singular_value: SingularValue = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__(dim, dim_y, "box", radius, sigma, saddle_radius, min_singular_value)
        generator = torch.Generator().manual_seed(seed)
        A = random_matrix(self.dim_x, self.dim_y, min_singular_value, generator)
        x_star = self._interior_point(self.dim_x, saddle_radius, generator)
        y_star = self._interior_point(self.dim_y, saddle_radius, generator)

        def diagonal(d: int) -> torch.Tensor:
            p = torch.zeros(d, dtype=torch.float64)
            p[: math.ceil(curved_fraction * d)] = curvature
            return p

        p, q = diagonal(self.dim_x), diagonal(self.dim_y)
        self.register_buffer("A", A)
        self.register_buffer("p", p)
        self.register_buffer("q", q)
        self.register_buffer("b", -p * x_star - A @ y_star)
        self.register_buffer("c", q * y_star - A.T @ x_star)
        self.register_buffer("x_star", x_star)
        self.register_buffer("y_star", y_star)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (0.5 * (self.p * x * x).sum(-1) + ((x @ self.A) * y).sum(-1) - 0.5 * (self.q * y * y).sum(-1)
                + x @ self.b + y @ self.c)

    def exact_grad(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.p * x + y @ self.A.T + self.b, x @ self.A - self.q * y + self.c

    def _best_response(self, u: torch.Tensor, curvature: torch.Tensor) -> torch.Tensor:
        """sum_j max over |v_j| <= r of u_j v_j - curvature_j v_j^2 / 2."""
        r = self.radius
        safe = torch.where(curvature > 0, curvature, torch.ones_like(curvature))
        v = torch.clamp(u / safe, -r, r)
        curved = u * v - 0.5 * curvature * v * v
        return torch.where(curvature > 0, curved, r * u.abs()).sum(-1)

    def gap(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        best_response_y = 0.5 * (self.p * x * x).sum(-1) + x @ self.b + self._best_response(x @ self.A + self.c, self.q)
        best_response_x = (-0.5 * (self.q * y * y).sum(-1) + y @ self.c
                           - self._best_response(y @ self.A.T + self.b, self.p))
        return best_response_y - best_response_x
