"""The global Lyapunov certificate of a neural observer as linear matrix inequalities (LMIs), solved
with cvxpy (Clarabel or SCS), and an independent eigenvalue check of the same matrices.

The observer of a Lur'e system (components/sysid/systems.py) copies the model and adds a correction
of the innovation y~ = y - C z_hat:

    c(y~) = L y~ + W2 [tanh(W1 y~ + b) - tanh(b)]        (components/sysid/observer.py)

so that, without measurement noise, the error e = z - z_hat obeys

    de/dt = (A + delta B H - L C) e - W2 w,   delta in [slope_low, slope_high],
    w = tanh(W1 C e + b) - tanh(b),           w_i (v_i - w_i) >= 0 with v = W1 C e

(each shifted tanh has slope in (0, 1], so w_i / v_i lies in [0, 1]: an incremental sector
constraint). V(e) = e' P e decreases at rate alpha, dV/dt <= -alpha V for every e, when for both
ends of the slope interval (the matrix is affine in delta) and some diagonal Lambda >= 0 (the
S-procedure multipliers of the sector constraints)

    M(delta) = [[He(P (A + delta B H) - P L C) + alpha P,  -P W2 + C' W1' Lambda],
                [(-P W2 + C' W1' Lambda)',                 -2 Lambda          ]]  <=  -eps I.

That is the certificate: global (every e, every true state), exponential with rate alpha/2 in the
norm. For fixed weights it is an LMI in (P, Lambda) (`check`); with W1 fixed and the substitutions
Z = P L, Y = P W2 it is an LMI in (P, Z, Y, Lambda) (`project`), whose solution gives certified
weights L = P^-1 Z, W2 = P^-1 Y nearest (in ||Z - P L0||^2 + ||Y - P W2_0||^2) to given ones.

Both problems are built once per shape with cvxpy Parameters (disciplined parametrized
programming), so a re-solve skips cvxpy's compilation; `solver_stats` gives the solver's own
iteration count and solve time, which the task logs as the cost of certification.

Why cvxpy and not a hand-written solver: interior-point SDP solvers (Clarabel, SCS) are the
well-kept tools for this; the only code here is the LMI's algebra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from framework.extras import require


def lmi_matrix(system: Any, P: np.ndarray, lam: np.ndarray, L: np.ndarray, W1: np.ndarray, W2: np.ndarray,
               alpha: float, delta: float) -> np.ndarray:
    """M(delta) of the module docstring, assembled in numpy (float64) from the weights themselves."""
    A = system.A + delta * system.B @ system.H - L @ system.C
    top_left = P @ A + A.T @ P + alpha * P
    off = -P @ W2 + system.C.T @ W1.T @ np.diag(lam)
    return np.block([[top_left, off], [off.T, -2.0 * np.diag(lam)]])


def eig_margin(system: Any, P: np.ndarray, lam: np.ndarray, L: np.ndarray, W1: np.ndarray, W2: np.ndarray,
               alpha: float) -> float:
    """-max eigenvalue of M(delta) over both ends of the slope interval (numpy's eigvalsh of the
    symmetrized matrix), scaled by 1 / max eigenvalue of P: > 0 certifies the observer with (P, Lambda),
    independently of the solver (P must be positive definite: checked too, else -inf)."""
    P = (P + P.T) / 2
    p_eigs = np.linalg.eigvalsh(P)
    if p_eigs[0] <= 0:
        return float("-inf")
    worst = max(np.linalg.eigvalsh((m + m.T) / 2)[-1]
                for m in (lmi_matrix(system, P, lam, L, W1, W2, alpha, d) for d in (system.slope_low, system.slope_high)))
    return float(-worst / p_eigs[-1])


@dataclass
class Solve:
    """One SDP solve: the solver's status and cost, and the solution (None when not solved)."""

    status: str
    iterations: int
    seconds: float
    P: np.ndarray | None = None
    lam: np.ndarray | None = None
    L: np.ndarray | None = None
    W2: np.ndarray | None = None
    value: float = float("nan")

    @property
    def solved(self) -> bool:
        return self.status == "optimal"


class Certifier:
    """The LMIs of one system and observer shape (module docstring), built once and re-solved.

    Args:
        system: The Lur'e system.
        hidden: Width of the observer's tanh layer.
        alpha: Decay rate of V in the certificate.
        eps: Strictness: M <= -eps I (P >= I normalizes the scale).
        p_max: Bound P <= p_max I (and Lambda <= p_max) of the margin problem, which keeps it bounded.
        solver: cvxpy's solver name, CLARABEL or SCS.
    """

    def __init__(self, system: Any, hidden: int, alpha: float = 0.1, eps: float = 1e-3, p_max: float = 1e3,
                 solver: str = "CLARABEL") -> None:
        self.cp = require("cvxpy", "the lmi certificate (components/sysid/certificate.py)")
        self.system, self.hidden, self.alpha, self.eps, self.p_max = system, hidden, alpha, eps, p_max
        self.solver = solver
        self._check = self._build(project=False)
        self._project = self._build(project=True)
        self._margin = self._build(project=False, margin=True)

    def _build(self, project: bool, margin: bool = False) -> dict[str, Any]:
        cp, s = self.cp, self.system
        n, p, h = s.state_dim, s.output_dim, self.hidden
        P = cp.Variable((n, n), symmetric=True)
        lam = cp.Variable(h, nonneg=True)
        W1C = cp.Parameter((h, n))            # W1 C (fixed in every problem)
        out: dict[str, Any] = {"P": P, "lam": lam, "W1C": W1C}
        if project:
            Z, Y = cp.Variable((n, p)), cp.Variable((n, h))
            L0, W20 = cp.Parameter((n, p)), cp.Parameter((n, h))
            PL, PW2 = Z, Y
            out.update(Z=Z, Y=Y, L0=L0, W20=W20)
        else:
            L0, W20 = cp.Parameter((n, p)), cp.Parameter((n, h))
            PL, PW2 = P @ L0, P @ W20
            out.update(L0=L0, W20=W20)
        t = cp.Variable() if margin else None
        constraints = [P >> np.eye(n)]
        for delta in (s.slope_low, s.slope_high):
            PA = P @ (s.A + delta * s.B @ s.H) - PL @ s.C
            off = -PW2 + W1C.T @ cp.diag(lam)
            M = cp.bmat([[PA + PA.T + self.alpha * P, off], [off.T, -2 * cp.diag(lam)]])
            M = (M + M.T) / 2
            bound = t if margin else -self.eps
            constraints.append(M << bound * np.eye(n + h))
        if margin:
            constraints += [P << self.p_max * np.eye(n), lam <= self.p_max]
            objective = cp.Minimize(t)
        elif project:
            objective = cp.Minimize(cp.sum_squares(Z - P @ L0) + cp.sum_squares(Y - P @ W20))
        else:
            objective = cp.Minimize(0)
        out["t"] = t
        out["problem"] = cp.Problem(objective, constraints)
        return out

    def _solve(self, built: dict[str, Any], L: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> tuple[Any, str]:
        cp = self.cp
        built["W1C"].value = W1 @ self.system.C
        built["L0"].value, built["W20"].value = L, W2
        try:
            built["problem"].solve(solver=self.solver)
            status = built["problem"].status
        except cp.error.SolverError:
            status = "solver_error"
        return built["problem"], status

    @staticmethod
    def _stats(problem: Any) -> tuple[int, float]:
        stats = problem.solver_stats
        if stats is None:
            return 0, 0.0
        return int(stats.num_iters or 0), float(stats.solve_time or 0.0)

    def check(self, L: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> Solve:
        """Feasibility of the certificate for fixed weights: status 'optimal' = certified by the solver."""
        problem, status = self._solve(self._check, L, W1, W2)
        iters, seconds = self._stats(problem)
        if status not in ("optimal", "optimal_inaccurate"):
            return Solve(status, iters, seconds)
        return Solve(status, iters, seconds, P=self._check["P"].value, lam=np.maximum(self._check["lam"].value, 0))

    def margin(self, L: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> Solve:
        """min t with M(delta) <= t I, I <= P <= p_max I: value t* < 0 iff certifiable (bounded P);
        the solution's P and Lambda are the best certificate, for the eigenvalue check."""
        problem, status = self._solve(self._margin, L, W1, W2)
        iters, seconds = self._stats(problem)
        if status not in ("optimal", "optimal_inaccurate"):
            return Solve(status, iters, seconds)
        return Solve(status, iters, seconds, P=self._margin["P"].value, lam=np.maximum(self._margin["lam"].value, 0),
                     value=float(self._margin["t"].value))

    def project(self, L: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> Solve:
        """Certified (L, W2) nearest the given ones, W1 fixed: the LMI fine-tuning's convex step."""
        problem, status = self._solve(self._project, L, W1, W2)
        iters, seconds = self._stats(problem)
        if status not in ("optimal", "optimal_inaccurate"):
            return Solve(status, iters, seconds)
        P = self._project["P"].value
        P = (P + P.T) / 2
        return Solve(status, iters, seconds, P=P, lam=np.maximum(self._project["lam"].value, 0),
                     L=np.linalg.solve(P, self._project["Z"].value), W2=np.linalg.solve(P, self._project["Y"].value),
                     value=float(problem.value))
