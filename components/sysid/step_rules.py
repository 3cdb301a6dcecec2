"""Step-size rules of projected online gradient descent on the squared prediction loss.

drift_sysid (abstract: ../../../shared/papers/drift_sysid.md): the learner predicts y_t with
phi_t . theta_t and steps theta_{t+1} = Proj(theta_t + eta_t e_t phi_t), e_t = y_t - phi_t . theta_t.
A rule gives eta_t for each of S parallel streams (numpy, float64):

    rule.reset(streams, dim, radius)             once, before the stream starts
    rule.step_size(t) -> (S,)                    eta_t for every stream
    rule.observe(move, phi, residual, mask)      after step t: move = theta_{t+1} - theta_t (S, d)
    rule.proxy -> (S,) or None                   the rule's proxy of the local path variation per step
    rule.indicator -> (S,) or None               its residual proxy read as a health indicator

The fixed steps of the oracle grid are the task's own (`online_identification`), not rules.
"""

from __future__ import annotations

import numpy as np


class _Rule:
    """Shared state: the number of streams and the label metric keys use."""

    def __init__(self, label: str) -> None:
        if not label or not label.replace("_", "").isalnum():
            raise ValueError(f"label must be a non-empty word of letters, digits and '_', got {label!r}")
        self.label = label
        self.streams = 0
        self.proxy: np.ndarray | None = None
        self.indicator: np.ndarray | None = None

    def reset(self, streams: int, dim: int, radius: float) -> None:
        self.streams = streams

    def observe(self, move: np.ndarray, phi: np.ndarray, residual: np.ndarray, mask: np.ndarray) -> None:
        return None


class FixedStep(_Rule):
    """eta_t = eta: one hand-set constant step (a tuned or mis-tuned baseline).

    Args:
        eta: The step size, > 0.
        label: Name in metric keys (`test/regret_<label>_<group>`).
    """

    def __init__(self, eta: float, label: str = "fixed") -> None:
        super().__init__(label)
        if eta <= 0:
            raise ValueError(f"eta must be > 0, got {eta}")
        self.eta = eta

    def step_size(self, t: int) -> np.ndarray:
        return np.full(self.streams, self.eta)


class InverseSqrtStep(_Rule):
    """eta_t = eta0 / sqrt(t + 1): the classical anytime schedule of static online learning,
    which stops tracking a drifting target as its steps shrink.

    Args:
        eta0: The first step, > 0.
        label: Name in metric keys.
    """

    def __init__(self, eta0: float = 0.1, label: str = "inv_sqrt") -> None:
        super().__init__(label)
        if eta0 <= 0:
            raise ValueError(f"eta0 must be > 0, got {eta0}")
        self.eta0 = eta0

    def step_size(self, t: int) -> np.ndarray:
        return np.full(self.streams, self.eta0 / np.sqrt(t + 1.0))


class ResidualAdaptiveStep(_Rule):
    """The residual-based adaptive step: the oracle step of the blockwise analysis with the
    unknown local path variation replaced by a residual proxy (our reading of the abstract).

    The analysis gives E[R_T] = O(T / sqrt(W) + W V_T) for blocks of W steps, i.e. a step
    eta ~ 1 / sqrt(W), and the oracle W = (T / V_T)^(2/3), i.e. eta* ~ (V_T / T)^(1/3): the cube
    root of the path variation per step. The rule estimates the local variation per step by the
    proxy v_t = || EMA_window(theta_{t+1} - theta_t) ||: each move is eta_t e_t phi_t, the residual
    times the regressor, whose mean is the prediction-error signal that makes the learner follow
    the drift; averaging over `window` steps cancels the zero-mean noise part of the residual,
    up to an overhead of about eta sigma |phi| / sqrt(2 window). Then

        eta_{t+1} = min(max_normalized_step, scale * (v_t / radius)^exponent) / p_t,

    with p_t = EMA_window(|phi_t|^2) (normalizing by the regressor power makes eta p a
    dimensionless gain and keeps eta |phi|^2 below `max_normalized_step`). When the drift signal
    dominates the noise overhead, v_t tracks the drift and eta_t the oracle's scaling; when the
    noise dominates (noise >> drift), v_t measures the noise and the step stays too large: the
    failure regime the paper diagnoses.

    The rule also keeps the residual energy EMA_window(e_t^2), the local prediction error, as
    `indicator` (bias-corrected as Adam's moments are, so that its start-up is not a trend): on degradation streams it rises with wear (the paper's health-indicator trend).

    Args:
        scale: The constant c of the rule (the paper's is not in the abstract); set once, not per run.
        exponent: The power of the variation proxy; 1/3 is the oracle rate's.
        window: Length of the exponential averages, in steps (alpha = 1 - 1 / window).
        max_normalized_step: Cap on eta p (the stable range of normalized LMS is below 2).
        initial_normalized_step: eta_0 p before any residual is seen.
        label: Name in metric keys.
    """

    def __init__(self, scale: float = 3.0, exponent: float = 1.0 / 3.0, window: int = 100,
                 max_normalized_step: float = 1.0, initial_normalized_step: float = 0.5,
                 label: str = "adaptive") -> None:
        super().__init__(label)
        if scale <= 0 or not 0 < exponent <= 1:
            raise ValueError(f"scale must be > 0 and exponent in (0, 1], got scale={scale}, exponent={exponent}")
        if window < 1:
            raise ValueError(f"window must be >= 1 step, got {window}")
        if not 0 < initial_normalized_step <= max_normalized_step:
            raise ValueError("need 0 < initial_normalized_step <= max_normalized_step, got "
                             f"{initial_normalized_step} and {max_normalized_step}")
        self.scale, self.exponent, self.window = scale, exponent, window
        self.max_gain, self.initial_gain = max_normalized_step, initial_normalized_step

    def reset(self, streams: int, dim: int, radius: float) -> None:
        super().reset(streams, dim, radius)
        self.radius = radius
        self.mean_move = np.zeros((streams, dim))
        self.power = np.full(streams, float(dim))  # E|phi|^2 of unit-variance regressors, until seen
        self.proxy = np.zeros(streams)
        self.gain = np.full(streams, self.initial_gain)
        self.energy = np.zeros(streams)
        self.weight = np.zeros(streams)  # 1 - (1 - 1/window)^n: the EMA's bias correction
        self.indicator = np.zeros(streams)

    def step_size(self, t: int) -> np.ndarray:
        return self.gain / self.power

    def observe(self, move: np.ndarray, phi: np.ndarray, residual: np.ndarray, mask: np.ndarray) -> None:
        alpha = np.where(mask, 1.0 / self.window, 0.0)
        self.mean_move += alpha[:, None] * (move - self.mean_move)
        self.power += alpha * ((phi * phi).sum(-1) - self.power)
        self.energy += alpha * (residual * residual - self.energy)
        self.weight += alpha * (1.0 - self.weight)
        self.indicator = self.energy / np.maximum(self.weight, 1e-300)
        self.proxy = np.linalg.norm(self.mean_move, axis=-1)
        gain = np.minimum(self.max_gain, self.scale * (self.proxy / self.radius) ** self.exponent)
        self.gain = np.where(mask, gain, self.gain)  # a stream without a step keeps its step
