"""Conditional flow matching (Lipman et al. 2023; Tong et al. 2024) and the ODE sampler it trains.

The straight-line (rectified) probability path from a source sample x0 to a target sample x1:

    x_t = (1 - t) x0 + t x1 (+ sigma * eps),    u_t = x1 - x0,

and the loss E_t || v(x_t, t, cond) - u_t ||^2 with t ~ U[0, 1]. How x0 and x1 are paired is the
*coupling*:

- ``paired``: x0[i] goes to x1[i] (noise -> data with a condition, or known correspondences);
- ``independent``: the batch's pairs are shuffled, i.e. the product of the two marginals;
- ``minibatch_ot``: the batch's pairs are the exact optimal assignment under squared Euclidean
  cost (scipy's Hungarian solver; equal batch sizes), which straightens the learned paths.

`integrate` then carries samples along v from t0 to t1 with a fixed-step solver (Euler, midpoint or
classic RK4). A velocity field is any callable ``velocity(x, t, cond) -> dx/dt`` where x is
(B, *shape), t is (B,) and cond is None or (B, ...); `VelocityMLP` is a small one for flat states.
"""

from __future__ import annotations

from typing import Callable, Literal

import torch
from torch import nn

from components.types import NonNegativeInt, PositiveInt

Velocity = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]
Coupling = Literal["paired", "independent", "minibatch_ot"]
Solver = Literal["euler", "midpoint", "rk4"]


def couple(x0: torch.Tensor, x1: torch.Tensor, coupling: Coupling,
           generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Reorder x1 so that (x0[i], x1[i]) are the pairs of `coupling` (x0 is never reordered, so a
    condition aligned with x0 stays aligned)."""
    if coupling == "paired":
        if x0.shape[0] != x1.shape[0]:
            raise ValueError(f"paired coupling needs equal batch sizes, got {x0.shape[0]} and {x1.shape[0]}")
        return x0, x1
    if coupling == "independent":
        return x0, x1[torch.randperm(x1.shape[0], generator=generator, device="cpu").to(x1.device)][: x0.shape[0]]
    if coupling == "minibatch_ot":
        return x0, x1[ot_assignment(x0, x1)]
    raise ValueError(f"coupling must be one of paired, independent, minibatch_ot; got '{coupling}'")


def ot_assignment(x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    """Indices j(i) into x1 minimising sum_i ||x0[i] - x1[j(i)]||^2 over one-to-one assignments (the
    exact discrete OT plan between two uniform batches of equal size)."""
    from scipy.optimize import linear_sum_assignment

    if x0.shape[0] != x1.shape[0]:
        raise ValueError(f"minibatch_ot coupling needs equal batch sizes, got {x0.shape[0]} and {x1.shape[0]}")
    cost = torch.cdist(x0.detach().flatten(1).double(), x1.detach().flatten(1).double()).pow(2)
    _, columns = linear_sum_assignment(cost.cpu().numpy())
    return torch.as_tensor(columns, device=x1.device)


def interpolate(x0: torch.Tensor, x1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The straight path's point at times t (B,): (1 - t) x0 + t x1, t broadcast over x's dims."""
    t = t.reshape(-1, *([1] * (x0.dim() - 1)))
    return (1 - t) * x0 + t * x1


def flow_matching_loss(velocity: Velocity, x0: torch.Tensor, x1: torch.Tensor, *, cond: torch.Tensor | None = None,
                       coupling: Coupling = "paired", sigma: float = 0.0,
                       generator: torch.Generator | None = None) -> torch.Tensor:
    """Mean squared error between v(x_t, t, cond) and the path's velocity x1 - x0, at one uniform t
    per example; `sigma` > 0 adds Gaussian noise of that scale to x_t (independent CFM)."""
    x0, x1 = couple(x0, x1, coupling, generator)
    t = torch.rand(x0.shape[0], generator=generator, device="cpu").to(x0.device, x0.dtype)
    xt = interpolate(x0, x1, t)
    if sigma > 0:
        xt = xt + sigma * torch.randn(xt.shape, generator=generator, device="cpu").to(xt.device, xt.dtype)
    return (velocity(xt, t, cond) - (x1 - x0)).pow(2).mean()


def integrate(velocity: Velocity, x: torch.Tensor, *, steps: int, solver: Solver = "euler",
              cond: torch.Tensor | None = None, t0: float = 0.0, t1: float = 1.0,
              return_path: bool = False) -> torch.Tensor:
    """Solve dx/dt = v(x, t, cond) from t0 to t1 in `steps` equal steps. Returns x(t1), or with
    `return_path` the states at every step, (steps + 1, B, *shape), x(t0) first."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    h = (t1 - t0) / steps
    path = [x]
    for k in range(steps):
        t = torch.full((x.shape[0],), t0 + k * h, device=x.device, dtype=x.dtype)
        if solver == "euler":
            x = x + h * velocity(x, t, cond)
        elif solver == "midpoint":
            x = x + h * velocity(x + 0.5 * h * velocity(x, t, cond), t + 0.5 * h, cond)
        elif solver == "rk4":
            k1 = velocity(x, t, cond)
            k2 = velocity(x + 0.5 * h * k1, t + 0.5 * h, cond)
            k3 = velocity(x + 0.5 * h * k2, t + 0.5 * h, cond)
            k4 = velocity(x + h * k3, t + h, cond)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        else:
            raise ValueError(f"solver must be one of euler, midpoint, rk4; got '{solver}'")
        if return_path:
            path.append(x)
    return torch.stack(path) if return_path else x


class VelocityMLP(nn.Module):
    """A velocity field for flat states: v(x, t, cond) = MLP([x, time features, cond]).

    Time enters as `time_features` sinusoids sin/cos(2 pi k t), k = 1..time_features/2, plus t itself.

    Args:
        dim: Width of the state x, (B, dim).
        cond_dim: Width of the condition (B, cond_dim); 0 for none.
        hidden: Widths of the hidden layers.
        time_features: Number of sinusoidal time features (even).
    """

    def __init__(self, dim: PositiveInt, cond_dim: NonNegativeInt = 0, hidden: tuple[PositiveInt, ...] = (128, 128),
                 time_features: NonNegativeInt = 16) -> None:
        super().__init__()
        if time_features % 2:
            raise ValueError(f"time_features must be even, got {time_features}")
        self.dim, self.cond_dim = dim, cond_dim
        self.register_buffer("frequencies", 2 * torch.pi * torch.arange(1, time_features // 2 + 1, dtype=torch.float32))
        layers: list[nn.Module] = []
        width = dim + 1 + time_features + cond_dim
        for next_width in hidden:
            layers += [nn.Linear(width, next_width), nn.SiLU()]
            width = next_width
        layers.append(nn.Linear(width, dim))
        self.net = nn.Sequential(*layers)

    def time_embedding(self, t: torch.Tensor) -> torch.Tensor:
        """(B,) times -> (B, 1 + time_features)."""
        angles = t[:, None] * self.frequencies
        return torch.cat([t[:, None], angles.sin(), angles.cos()], dim=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        """(B, dim), (B,), (B, cond_dim) or None -> (B, dim)."""
        if (cond is None) != (self.cond_dim == 0):
            raise ValueError(f"this velocity field takes a condition of width {self.cond_dim}; got "
                             f"{'none' if cond is None else tuple(cond.shape)}")
        parts = [x, self.time_embedding(t.to(x.dtype))] + ([cond.flatten(1)] if cond is not None else [])
        return self.net(torch.cat(parts, dim=1))
