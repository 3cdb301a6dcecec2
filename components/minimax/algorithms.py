"""Stochastic first-order algorithms for constrained minimax problems min_x max_y f(x, y).

Paper: "Last-iterate convergence of perturbed stochastic extragradient / optimistic GDA in
constrained monotone games" (perturbed_eg, NeurIPS 2026; specs/perturbed_eg/README.md). Vanilla
S-EG and S-OGDA can fail to converge in the last iterate under gradient noise; the paper runs them
on the regularized problem f(x, y) + lambda/2 ||x - x_a||^2 - lambda/2 ||y - y_a||^2 (strongly
convex-strongly concave) and balances the regularization bias against the stochastic and
optimization errors to get a last-iterate gap of O(T^(-1/4 + eps)).

The contract every algorithm keeps (the `minimax` task calls it; registry table `algorithms`):

- ``reset(problem, x, y, horizon)``: before the first step, with the initial point and the
  number of iterations T the run will make (fixed-horizon schedules need it).
- ``step(problem, x, y, t, generator) -> (x, y)``: iteration t = 0, 1, ..., T-1; returns the
  next (feasible) iterate. The problem gives ``grad(x, y, generator)``, ``project_x``,
  ``project_y`` and ``center()`` (see components.minimax.games).
- ``oracle_calls_per_step``: noisy gradient evaluations per iteration (2 for EG, 1 for OGDA).

Every method works on batches of independent replicates (leading dimensions of x and y).
Below z = (x, y) and the monotone operator is F(z) = (grad_x f, -grad_y f).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from components.types import NonNegativeFloat, PositiveFloat

Tensor = torch.Tensor
StepSchedule = Literal["constant", "sqrt", "harmonic"]


class MinimaxAlgorithm:
    """Base: the EG or OGDA update on F + lambda_t (z - anchor); vanilla methods have lambda = 0.

    Subclasses choose the update (`_update`) and the schedules (`step_size`, `regularization`).
    """

    oracle_calls_per_step = 1

    def __init__(self) -> None:
        self.horizon = 1
        self.anchor: tuple[Tensor, Tensor] | None = None

    def reset(self, problem: Any, x: Tensor, y: Tensor, horizon: int) -> None:
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        self.horizon = horizon
        self.anchor = self._anchor(problem, x, y)

    def _anchor(self, problem: Any, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor] | None:
        return None

    def step_size(self, t: int) -> float:
        raise NotImplementedError

    def regularization(self, t: int) -> float:
        return 0.0

    def _operator(self, problem: Any, x: Tensor, y: Tensor, lam: float,
                  generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        """A noisy sample of (grad_x, -grad_y) of the regularized problem at (x, y)."""
        gx, gy = problem.grad(x, y, generator)
        fx, fy = gx, -gy
        if lam > 0 and self.anchor is not None:
            ax, ay = self.anchor
            fx, fy = fx + lam * (x - ax), fy + lam * (y - ay)
        return fx, fy

    def step(self, problem: Any, x: Tensor, y: Tensor, t: int,
             generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
        if self.anchor is None and self.regularization(t) > 0:
            raise RuntimeError(f"{type(self).__name__}.reset(...) must be called before step(...)")
        return self._update(problem, x, y, self.step_size(t), self.regularization(t), generator)

    def _update(self, problem: Any, x: Tensor, y: Tensor, eta: float, lam: float,
                generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        raise NotImplementedError


class _Extragradient:
    """z_half = P(z - eta F(z; xi)), z_next = P(z - eta F(z_half; xi')): two oracle calls."""

    oracle_calls_per_step = 2

    def _update(self, problem, x, y, eta, lam, generator):  # type: ignore[no-untyped-def]
        fx, fy = self._operator(problem, x, y, lam, generator)
        xh, yh = problem.project_x(x - eta * fx), problem.project_y(y - eta * fy)
        fx, fy = self._operator(problem, xh, yh, lam, generator)
        return problem.project_x(x - eta * fx), problem.project_y(y - eta * fy)


class _Optimistic:
    """Projected optimistic GDA in Popov's (past-extragradient) form, the constrained form of OGDA:
    w_t = P(z_t - eta_t F(w_{t-1})), z_{t+1} = P(z_t - eta_t F(w_t)); one oracle call per step,
    the extrapolation reuses the previous sample. Unconstrained with a constant step this is
    z_{t+1} = z_t - eta (2 F(w_t) - F(w_{t-1})), the usual OGDA."""

    oracle_calls_per_step = 1

    def reset(self, problem, x, y, horizon):  # type: ignore[no-untyped-def]
        super().reset(problem, x, y, horizon)  # type: ignore[misc]
        self.previous: tuple[Tensor, Tensor] | None = None

    def _update(self, problem, x, y, eta, lam, generator):  # type: ignore[no-untyped-def]
        previous = getattr(self, "previous", None)
        if previous is None:  # first step: extrapolate with a fresh sample at z_0
            previous = self._operator(problem, x, y, lam, generator)
        wx, wy = problem.project_x(x - eta * previous[0]), problem.project_y(y - eta * previous[1])
        fx, fy = self._operator(problem, wx, wy, lam, generator)
        self.previous = (fx, fy)
        return problem.project_x(x - eta * fx), problem.project_y(y - eta * fy)


class _Vanilla(MinimaxAlgorithm):
    def __init__(self, step_size: PositiveFloat = 0.5, schedule: StepSchedule = "constant",
                 step_scale: PositiveFloat = 2.0, step_offset: PositiveFloat = 10.0,
                 horizon_exponent: NonNegativeFloat = 0.25) -> None:
        super().__init__()
        if schedule not in ("constant", "sqrt", "harmonic"):
            raise ValueError(f"schedule must be 'constant', 'sqrt' or 'harmonic', got {schedule!r}")
        self.eta, self.schedule = step_size, schedule
        self.step_scale, self.step_offset, self.horizon_exponent = step_scale, step_offset, horizon_exponent

    def step_size(self, t: int) -> float:
        if self.schedule == "constant":
            return self.eta
        if self.schedule == "sqrt":
            return self.eta / math.sqrt(t + 1)
        # The perturbed methods' step family without the regularization: see _VANILLA_ARGS.
        return min(self.eta, self.step_scale * self.horizon ** self.horizon_exponent / (t + self.step_offset))


_VANILLA_ARGS = """
    Args:
        step_size: eta (constant), eta_0 of eta_t = eta_0 / sqrt(t + 1) ("sqrt"), or the cap
            eta_max of the "harmonic" step.
        schedule: "constant", "sqrt" (the decreasing step of NOTES.md's second baseline) or
            "harmonic": eta_t = min(eta_max, step_scale * T^horizon_exponent / (t + step_offset)),
            T the horizon. It is the step family of the perturbed methods, whose step
            min(max_step_size, c / (lambda (t + t_0))) with lambda = lambda_0 T^(-exponent) is this
            with eta_max = max_step_size, step_scale = c / lambda_0, step_offset = t_0 and
            horizon_exponent = exponent: a vanilla baseline on the same schedule, without the
            regularization of the operator.
        step_scale: The harmonic step's scale (ignored by the other schedules).
        step_offset: The harmonic step's t_0 (ignored by the other schedules).
        horizon_exponent: The harmonic step's growth with the horizon T (ignored by the other
            schedules); 0 makes it the same for every T.
"""


class StochasticExtragradient(_Extragradient, _Vanilla):
    __doc__ = """Vanilla S-EG (Korpelevich's extragradient with noisy gradients and projections), the
    baseline whose last iterate the paper says can stall at a noise floor on bilinear games
    (perturbed_eg).
""" + _VANILLA_ARGS


class StochasticOptimisticGDA(_Optimistic, _Vanilla):
    __doc__ = """Vanilla S-OGDA (projected optimistic GDA, Popov's form, one noisy gradient per step), the
    other baseline of perturbed_eg.
""" + _VANILLA_ARGS


class _Perturbed(MinimaxAlgorithm):
    def __init__(
        self,
        regularization: PositiveFloat = 1.0,
        lambda_schedule: Literal["horizon", "anytime"] = "horizon",
        exponent: PositiveFloat = 0.25,
        max_step_size: PositiveFloat = 0.5,
        step_scale: PositiveFloat = 2.0,
        step_offset: PositiveFloat = 10.0,
        anchor: Literal["center", "initial"] = "center",
    ) -> None:
        super().__init__()
        if lambda_schedule not in ("horizon", "anytime"):
            raise ValueError(f"lambda_schedule must be 'horizon' or 'anytime', got {lambda_schedule!r}")
        if anchor not in ("center", "initial"):
            raise ValueError(f"anchor must be 'center' or 'initial', got {anchor!r}")
        self.lambda0, self.lambda_schedule, self.exponent = regularization, lambda_schedule, exponent
        self.max_step_size, self.step_scale, self.step_offset = max_step_size, step_scale, step_offset
        self.anchor_at = anchor

    def _anchor(self, problem: Any, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        if self.anchor_at == "initial":
            return x.clone(), y.clone()
        return problem.center()

    def regularization(self, t: int) -> float:
        if self.lambda_schedule == "horizon":
            return self.lambda0 * self.horizon ** -self.exponent
        return self.lambda0 * (t + 1) ** -self.exponent

    def step_size(self, t: int) -> float:
        # The step of SGD-type methods on a lambda-strongly monotone problem: ~ 1/(lambda t).
        return min(self.max_step_size, self.step_scale / (self.regularization(t) * (t + self.step_offset)))


_PERTURBED_ARGS = """
    Args:
        regularization: lambda_0. The regularizer lambda/2 ||x - x_a||^2 - lambda/2 ||y - y_a||^2
            has lambda = lambda_0 * T^(-exponent) ("horizon", the paper's fixed-horizon choice
            balancing bias ~ lambda against stochastic error ~ 1/(lambda sqrt(T))) or
            lambda_t = lambda_0 * (t + 1)^(-exponent) ("anytime": no horizon needed, so the gap
            along one run follows the rate).
        lambda_schedule: "horizon" or "anytime".
        exponent: Decay exponent of lambda; 1/4 is the paper's balance (rate T^(-1/4)).
        max_step_size: Cap on the step size (the Lipschitz limit of the unperturbed operator).
        step_scale: c in eta_t = min(max_step_size, c / (lambda_t (t + step_offset))).
        step_offset: t_0 in the same formula (NOTES.md's prototype: c = 2, t_0 = 10).
        anchor: The reference point (x_a, y_a): the center of the sets (NOTES.md's
            lambda/2 ||x||^2 on a centered box) or the initial point.
"""


class PerturbedExtragradient(_Extragradient, _Perturbed):
    __doc__ = """Perturbed S-EG (perturbed_eg): S-EG on the regularized, strongly monotone problem,
    with a vanishing regularization and eta_t ~ 1/(lambda t); last-iterate gap O(T^(-1/4+eps)).
""" + _PERTURBED_ARGS


class PerturbedOptimisticGDA(_Optimistic, _Perturbed):
    __doc__ = """Perturbed S-OGDA (perturbed_eg): projected S-OGDA (Popov's form) on the regularized,
    strongly monotone problem; one noisy gradient per step; last-iterate gap O(T^(-1/4+eps)).
""" + _PERTURBED_ARGS
