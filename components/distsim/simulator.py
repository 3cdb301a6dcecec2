"""The simulated clock: runs a method for a grid of stepsizes x replicates in one batch and finds
the time to an epsilon-stationary point (plain torch; the `distributed_time` task drives it).

Every row of the batch (a stepsize, a replicate) has its own iterate and clock. After each round,
the squared gradient norm ||grad f(x)||^2 of the iterate the server held is recorded at the
checkpoints of a log-spaced time grid that the round covered (the server holds x^t from the end
of round t until the end of round t + 1). The time to an epsilon-stationary point of a stepsize is
the first checkpoint where the mean over its replicates is <= epsilon (E||grad f||^2 <= epsilon:
the paper's definition), and the tuned time is the smallest over the stepsize grid. A run stops
when every row's clock has passed the tuned time found so far (later checkpoints cannot lower the
minimum), or the time budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch


def compute_times(n: int, h: float, heterogeneity: str) -> torch.Tensor:
    """Seconds per stochastic gradient of each worker: all h, or h sqrt(i), or h i (i = 1..n)."""
    i = torch.arange(1, n + 1, dtype=torch.float64)
    if heterogeneity == "homogeneous":
        return torch.full((n,), float(h), dtype=torch.float64)
    if heterogeneity == "sqrt":
        return h * i.sqrt()
    if heterogeneity == "linear":
        return h * i
    raise ValueError(f"heterogeneity must be homogeneous, sqrt or linear, got {heterogeneity!r}")


def checkpoint_grid(budget: float, decades: float, per_decade: int) -> torch.Tensor:
    """Log-spaced times from budget * 10^(-decades) to budget (inclusive)."""
    count = int(round(decades * per_decade))
    return budget * 10.0 ** (torch.arange(-count, 1, dtype=torch.float64) / per_decade)


@dataclass
class Cluster:
    problem: Any
    n: int
    h: torch.Tensor
    kappa: float
    generator: torch.Generator


class Simulation:
    """One method on one problem and cluster, for `stepsizes` (multiples of 1/L) x `replicates`."""

    def __init__(self, problem: Any, method: Any, cluster: Cluster, stepsizes: list[float], replicates: int,
                 epsilon: float, budget: float, decades: float = 4.0, per_decade: int = 40) -> None:
        self.problem, self.method, self.cluster = problem, method, cluster
        self.stepsizes = [float(s) for s in stepsizes]
        self.S, self.R = len(self.stepsizes), int(replicates)
        self.epsilon, self.budget = float(epsilon), float(budget)
        gamma = torch.tensor(self.stepsizes, dtype=torch.float64) / problem.smoothness
        self.gamma = gamma.repeat_interleave(self.R)[:, None].to(problem.start().dtype)  # (B, 1)
        B = self.S * self.R
        self.x = problem.start().expand(B, -1).clone()
        self.clock = torch.zeros(B, dtype=torch.float64)
        self.checkpoints = checkpoint_grid(self.budget, decades, per_decade)  # (G,)
        self.record = torch.full((B, len(self.checkpoints)), float("nan"), dtype=torch.float64)
        self.rounds = 0
        self.diverged = torch.zeros(B, dtype=torch.bool)
        method.reset(cluster, self.x)

    def step(self) -> None:
        """One round for every row."""
        before = self.clock.clone()
        norm = self.problem.grad(self.x).pow(2).sum(-1)
        direction, seconds = self.method.round(self.cluster, self.x)
        self.x = self.x - self.gamma * direction
        bad = ~torch.isfinite(self.x).all(-1)
        if bad.any():  # a diverged row stays where it blew up: its gradient norm is +inf from now on
            self.diverged |= bad
            self.x = torch.where(bad[:, None], torch.full_like(self.x, 1e30), self.x)
        self.clock = self.clock + seconds.to(self.clock.dtype)
        cover = (self.checkpoints >= before[:, None]) & (self.checkpoints < self.clock[:, None])
        norm = torch.where(torch.isfinite(norm), norm, torch.full_like(norm, float("inf")))
        self.record = torch.where(cover, norm[:, None], self.record)
        self.rounds += 1

    def curves(self) -> torch.Tensor:
        """(S, G): the mean over replicates of ||grad f||^2 at each checkpoint (nan where not all
        replicates have reached it)."""
        return self.record.view(self.S, self.R, -1).mean(1)

    def times(self) -> list[float | None]:
        """Per stepsize, the first checkpoint with mean ||grad f||^2 <= epsilon (None: not reached)."""
        out: list[float | None] = []
        for curve in self.curves():
            hit = torch.nonzero(curve <= self.epsilon)
            out.append(float(self.checkpoints[hit[0, 0]]) if len(hit) else None)
        return out

    def best(self) -> tuple[int | None, float | None]:
        times = self.times()
        reached = [(t, i) for i, t in enumerate(times) if t is not None]
        if not reached:
            return None, None
        t, i = min(reached)
        return i, t

    def done(self) -> bool:
        horizon = self.budget
        _, t = self.best()
        if t is not None:
            horizon = t
        return bool((self.clock > horizon).all())

    def run(self, max_rounds: int = 10**7) -> None:
        while not self.done() and self.rounds < max_rounds:
            self.step()
