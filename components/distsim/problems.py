"""Smooth test problems for the distributed-time simulator (registry table `distsim_problems`).

Each problem is an ``nn.Module`` of float32 buffers (drawn in float64; float32 halves the cost of the
(batch, workers, d) noise and masks of a round), batched over leading dimensions:

- ``dim``: the dimension d of the iterates and gradients;
- ``grad(x)``: the exact gradient; ``value(x)``: f(x) - f* (>= 0);
- ``noisy_grad(x, count, generator)``: the mean of ``count`` unbiased stochastic gradients at x,
  ``grad(x) + sigma / sqrt(count d) * N(0, I_d)``: E||noise||^2 = sigma^2 / count (the sigma^2 of
  the paper's bounded-variance assumption; ``count`` broadcasts against x's leading dimensions);
- ``start()``: the starting point x^0; ``smoothness``: L.

`separable_valley`: f(x) = sum_j a_j psi_rho(x_j - c_j), psi_rho(u) = u^2 / 2 for u <= 0 and
u^2 / (2 rho) for u > 0 (curvatures a_j log-uniform in [mu, L], optimum c drawn from the seed,
start x^0 = 0). It is L-smooth and bounded below (f* = 0) for every rho >= 1.

- rho = 1 is a quadratic: the gradient is affine, so the average of gradients taken at perturbed
  copies x + u_i of the iterate is the gradient at x + mean(u_i). This is the structural
  assumption of inkheart_m4 in the form we test (our reading, the paper's text is not available
  to us: a functional inequality ||(1/n) sum_i grad f(x + u_i) - grad f(x)||^2 <= L_A^2
  ||(1/n) sum_i u_i||^2 + L_B^2 (1/n) sum_i ||u_i||^2, as in MARINA-P, with L_B = 0 here; every
  L-smooth function satisfies it with L_B = L, so it "does not restrict the class").
- rho > 1 bends each coordinate's valley: E[psi'(u + e)] != psi'(u) for zero-mean e, so the
  errors of independently compressed iterates no longer cancel in the average (L_B of the order
  of L (1 - 1/rho)): the problem that violates the assumption (the run control).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from components.types import NonNegativeFloat, PositiveFloat, PositiveInt


class SeparableValley(nn.Module):
    """f(x) = sum_j a_j psi_rho(x_j - c_j): a quadratic at rho = 1, an asymmetric valley above.

    Args:
        dim: Dimension d.
        smoothness: L, the largest curvature a_j.
        min_curvature: mu, the smallest curvature (a_j log-uniform in [mu, L]).
        radius: ||c|| in expectation (c = radius / sqrt(d) * N(0, I)): sets Delta = f(x^0) - f*.
        sigma: Standard deviation of one stochastic gradient (E||g - grad f||^2 = sigma^2).
        asymmetry: rho >= 1; 1 is the quadratic (the structural assumption holds with L_B = 0).
        seed: Draws a and c (follow the run seed so seeds redraw the problem).
    """

    def __init__(self, dim: PositiveInt, smoothness: PositiveFloat = 1.0, min_curvature: PositiveFloat = 0.01,
                 radius: PositiveFloat = 1.0, sigma: NonNegativeFloat = 1.0, asymmetry: float = 1.0,
                 seed: int = 0) -> None:
        super().__init__()
        if min_curvature > smoothness:
            raise ValueError(f"min_curvature ({min_curvature}) must be <= smoothness ({smoothness})")
        if not asymmetry >= 1.0:
            raise ValueError(f"asymmetry must be >= 1 (1 is the quadratic), got {asymmetry}")
        gen = torch.Generator().manual_seed(int(seed))
        logs = torch.rand(dim, generator=gen, dtype=torch.float64)
        a = torch.exp(math.log(min_curvature) + logs * (math.log(smoothness) - math.log(min_curvature)))
        a[torch.argmax(a)] = smoothness  # the largest curvature is L exactly
        c = radius / math.sqrt(dim) * torch.randn(dim, generator=gen, dtype=torch.float64)
        self.register_buffer("a", a.float())
        self.register_buffer("c", c.float())
        self.dim, self.smoothness, self.sigma, self.asymmetry = dim, smoothness, sigma, float(asymmetry)

    def _slope(self, u: torch.Tensor) -> torch.Tensor:
        return torch.where(u > 0, 1.0 / self.asymmetry, 1.0)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        u = x - self.c
        return self.a * u * self._slope(u)

    def value(self, x: torch.Tensor) -> torch.Tensor:
        u = x - self.c
        return (0.5 * self.a * u * u * self._slope(u)).sum(-1)

    def noisy_grad(self, x: torch.Tensor, count: torch.Tensor | float, generator: torch.Generator) -> torch.Tensor:
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        if not torch.is_tensor(count):
            count = torch.tensor(float(count), dtype=x.dtype)
        scale = self.sigma / torch.sqrt(count.clamp_min(1.0) * self.dim)
        return self.grad(x) + noise * scale

    def start(self) -> torch.Tensor:
        return torch.zeros(self.dim, dtype=self.a.dtype, device=self.a.device)
