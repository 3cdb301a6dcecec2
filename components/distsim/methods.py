"""Methods of the distributed-time simulator (registry table `distributed_methods`).

A method is stateful over one run: ``reset(sim, x)`` once, then ``round(sim, x) -> (direction,
seconds)`` per round: the server steps ``x <- x - gamma * direction`` and the round took
``seconds`` (a (B,) tensor: every row of the batch, a (stepsize, replicate) pair, has its own
clock). ``sim`` carries the problem, the number of workers n, their computation times h (an (n,)
tensor: seconds per stochastic gradient), kappa (seconds per coordinate sent, either direction,
each worker on its own link, as in the lower bound of Tyurin, ICLR 2026, that the paper cites) and
the noise generator. Our time model of a round: worker i receives its message (kappa x coordinates),
computes, and sends (kappa x coordinates); the server waits for the last worker it needs. The
non-distributed baseline runs on the fastest machine alone and communicates nothing.

Random sparsification: RandK, K = max(1, round(q d)) coordinates kept, scaled by d / K (unbiased,
E||C(v) - v||^2 = (d / K - 1)||v||^2), independently drawn for every worker and round.
q = n^(-sparsity_exponent): no compression at n = 1, K = d n^(-1/3) by default. Why 1/3 (our
analysis, not the paper's rule, which the abstract does not give): a worker's shadow error after
the ~1/p = 1/q rounds between full broadcasts has E||e_i||^2 ~ omega^2 gamma^2 ||step||^2 (omega =
d/K - 1), and compressing each worker's gradient at its shadow adds omega/n of L^2 ||e_i||^2 to
the average: omega^3 / n must stay O(1) for the stepsize to stay O(1/L), so omega ~ n^(1/3). With
d/sqrt(n) (exponent 1/2, tried first on seed 0) the tuned stepsize fell to 1/(8L) at n = 1024 and
M4's time there stayed about level with synchronous SGD's.

- `sgd`: non-distributed SGD (one stochastic gradient per step, h_min seconds).
- `sync_sgd`: synchronous (minibatch) SGD: the server broadcasts x (d coordinates), every worker
  sends one full stochastic gradient (d coordinates), the server averages.
- `randk_sgd`: the compressed baseline: x broadcast in full, gradients sent randomly sparsified
  (uplink compression only, DCGD with RandK).
- `m4` and `inkheart`: bidirectional compression with independent sparsifiers. The server
  keeps x; worker i keeps a shadow w_i. Downlink (MARINA-P style): with probability p (default q)
  the server sends x in full to every worker (w_i = x), else worker i receives C_i(x^t - x^{t-1})
  and sets w_i <- w_i + C_i(x^t - x^{t-1}), with a sparsifier of its own. Worker i computes
  stochastic gradients at w_i, g_i their mean, and sends C'_i(g_i - s_i) with a DIANA shift s_i
  (s_i <- s_i + (K/d) C'_i(g_i - s_i) on both sides); the server averages s_i + C'_i(g_i - s_i). Shadows are
  unbiased copies of x whose errors are independent across workers, so under the structural
  assumption (affine gradients, L_B = 0) they cancel in the average at rate 1/n while each
  message is n^(-1/3) of a vector: the d kappa term can shrink with n.
  `m4` is synchronous: every worker computes `batch` gradients, the round waits for the slowest.
  `inkheart` fixes the computation window instead (`window` x h_min seconds): worker i computes
  floor(window h_min / h_i) gradients, the server weights workers by their counts (a worker with
  none sends nothing): the Shadowheart-style answer to heterogeneous computation times.
  With equal h_i and window = batch the two coincide. What the paper's two methods do beyond
  this (their exact estimators, momentum, their choices of p and q) is not in the abstract; this
  is our construction of a method of that class (README, "Deviations").
  `independent: false` gives every worker the same downlink sparsifier (the server compresses
  once and broadcasts): the errors no longer cancel (a mechanism ablation).
"""

from __future__ import annotations

from typing import Any

import torch

from components.types import PositiveFloat, PositiveInt, Probability


def sparsify(v: torch.Tensor, q: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """RandK of the last axis with K = max(1, round(q d)): K coordinates drawn without replacement,
    scaled by d / K (unbiased, E||C(v) - v||^2 = (d / K - 1)||v||^2). Returns (C(v), K per vector)."""
    d = v.shape[-1]
    k = max(1, int(round(q * d)))
    if k >= d:
        return v, torch.full(v.shape[:-1], float(d), dtype=v.dtype, device=v.device)
    scores = torch.rand(v.shape, generator=generator, dtype=v.dtype, device=v.device)
    keep = torch.zeros_like(v).scatter_(-1, scores.topk(k, dim=-1).indices, d / k)
    return v * keep, torch.full(v.shape[:-1], float(k), dtype=v.dtype, device=v.device)


def density(n: int, exponent: float) -> float:
    return float(n) ** (-float(exponent))


class SGD:
    """Non-distributed SGD on the fastest machine: one stochastic gradient per step, no communication."""

    label = "sgd"

    def reset(self, sim: Any, x: torch.Tensor) -> None:
        return None

    def round(self, sim: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        g = sim.problem.noisy_grad(x, 1.0, sim.generator)
        return g, torch.full(x.shape[:-1], float(sim.h.min()), dtype=x.dtype)


class SyncSGD:
    """Synchronous SGD: broadcast x, one stochastic gradient per worker, full vectors both ways."""

    label = "sync_sgd"

    def reset(self, sim: Any, x: torch.Tensor) -> None:
        return None

    def round(self, sim: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # The mean of n independent stochastic gradients at x: equal in distribution to one draw
        # with n samples (the problem's Gaussian noise), without the (B, n, d) tensor.
        g = sim.problem.noisy_grad(x, float(sim.n), sim.generator)
        d = x.shape[-1]
        seconds = 2 * sim.kappa * d + float(sim.h.max())
        return g, torch.full(x.shape[:-1], seconds, dtype=x.dtype)


class RandKSGD:
    """Uplink random sparsification (DCGD-RandK): x broadcast in full, sparsified gradients back.

    Args:
        sparsity_exponent: q = n^(-sparsity_exponent) of each worker's message.
    """

    label = "randk_sgd"

    def __init__(self, sparsity_exponent: float = 1 / 3) -> None:
        self.exponent = sparsity_exponent

    def reset(self, sim: Any, x: torch.Tensor) -> None:
        return None

    def round(self, sim: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        d = x.shape[-1]
        xs = x.unsqueeze(-2).expand(*x.shape[:-1], sim.n, d)
        g = sim.problem.noisy_grad(xs, 1.0, sim.generator)
        sent, coords = sparsify(g, density(sim.n, self.exponent), sim.generator)
        per_worker = sim.kappa * d + sim.h + sim.kappa * coords          # (B, n)
        return sent.mean(-2), per_worker.max(-1).values


class _Bidirectional:
    """Shared part of `m4` and `inkheart` (module docstring)."""

    label = "bidirectional"

    def __init__(self, sparsity_exponent: float = 1 / 3, sync_probability: Probability | None = None,
                 independent: bool = True) -> None:
        self.exponent = sparsity_exponent
        self.sync_probability = sync_probability
        self.independent = independent
        self.shadow: torch.Tensor | None = None
        self.shift: torch.Tensor | None = None
        self.previous: torch.Tensor | None = None

    def reset(self, sim: Any, x: torch.Tensor) -> None:
        self.shadow, self.previous, self.shift = None, x.clone(), None

    def work(self, sim: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(gradients per worker (n,), computing seconds per worker (n,))."""
        raise NotImplementedError

    def round(self, sim: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n, d = sim.n, x.shape[-1]
        q = density(n, self.exponent)
        p = q if self.sync_probability is None else self.sync_probability
        rows = x.shape[:-1]
        full = x.unsqueeze(-2).expand(*rows, n, d)
        if self.shadow is None:  # the first round starts from a full broadcast
            self.shadow = full.clone()
            down = torch.full((*rows, n), float(d), dtype=x.dtype)
        else:
            delta = (x - self.previous).unsqueeze(-2)
            if self.independent:
                moved, down = sparsify(delta.expand(*rows, n, d), q, sim.generator)
            else:
                moved, down = sparsify(delta, q, sim.generator)
                moved, down = moved.expand(*rows, n, d), down.expand(*rows, n)
            sync = torch.rand(rows, generator=sim.generator, dtype=x.dtype) < p
            self.shadow = torch.where(sync[..., None, None], full, self.shadow + moved)
            down = torch.where(sync[..., None], torch.full_like(down, float(d)), down)
        self.previous = x.clone()
        self.dim = d
        counts, compute = self.work(sim)
        g = sim.problem.noisy_grad(self.shadow, counts.to(x.dtype)[:, None], sim.generator)
        if self.shift is None:
            self.shift = torch.zeros_like(g)
        # Uplink with DIANA shifts: worker i sends C'_i(g_i - s_i) and both sides move s_i by
        # q C'_i(g_i - s_i); the server's estimate of g_i is s_i + C'_i(g_i - s_i) (unbiased), so
        # the compression variance is that of g_i - s_i, not of g_i.
        sent, up = sparsify(g - self.shift, q, sim.generator)
        estimate = self.shift + sent
        active = (counts > 0).to(x.dtype)
        self.shift = self.shift + (up / d)[..., None] * sent * active[:, None]  # (K/d) C'_i(g_i - s_i)
        up = up * active
        weights = (counts / counts.sum()).to(x.dtype)
        direction = (estimate * weights[:, None]).sum(-2)
        per_worker = sim.kappa * down + compute + sim.kappa * up
        return direction, per_worker.max(-1).values


class M4(_Bidirectional):
    """Synchronous bidirectional compression: every worker computes `batch` stochastic gradients.

    Args:
        sparsity_exponent: q = n^(-sparsity_exponent) in both directions.
        batch: Stochastic gradients per worker and round.
        sync_probability: p of a full broadcast (None: q, one full vector per 1/q rounds on average).
        independent: Each worker its own downlink sparsifier (False: one shared mask).
    """

    label = "m4"

    def __init__(self, sparsity_exponent: float = 1 / 3, batch: PositiveInt = 1,
                 sync_probability: Probability | None = None, independent: bool = True) -> None:
        super().__init__(sparsity_exponent, sync_probability, independent)
        self.batch = batch

    def work(self, sim: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.full((sim.n,), float(self.batch), dtype=torch.float64), self.batch * sim.h


class Inkheart(_Bidirectional):
    """Bidirectional compression with a fixed computation window (heterogeneity-aware).

    Args:
        sparsity_exponent: q = n^(-sparsity_exponent) in both directions.
        window: The computing window per round, in units of the fastest worker's h (None: as
            long as a round's expected communication, see `seconds`).
        sync_probability: p of a full broadcast (None: q).
        independent: Each worker its own downlink sparsifier (False: one shared mask).
    """

    label = "inkheart"

    def __init__(self, sparsity_exponent: float = 1 / 3, window: PositiveFloat | None = None,
                 sync_probability: Probability | None = None, independent: bool = True) -> None:
        super().__init__(sparsity_exponent, sync_probability, independent)
        self.window = window

    def seconds(self, sim: Any, d: int) -> float:
        """The computing window: `window` x h_min, or (None) as long as a round's expected
        communication takes, kappa (p d + (1 - p) K + K), and at least h_min: compute while the
        messages would travel, so that a round at most doubles and each worker averages about
        that many gradients (Shadowheart's balance of computation and communication)."""
        h = float(sim.h.min())
        if self.window is not None:
            return self.window * h
        q = density(sim.n, self.exponent)
        p = q if self.sync_probability is None else self.sync_probability
        k = min(d, max(1, int(round(q * d))))
        return max(h, sim.kappa * (p * d + (1 - p) * k + k))

    def work(self, sim: Any) -> tuple[torch.Tensor, torch.Tensor]:
        seconds = self.seconds(sim, self.dim)
        counts = torch.floor(seconds / sim.h + 1e-9)
        return counts, torch.full_like(sim.h, seconds)
