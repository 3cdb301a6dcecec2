"""Nonlinear dynamical systems in Lur'e form, for observers and identification (lmi_observer).

A Lur'e system is a linear system closed through a scalar, slope-restricted nonlinearity,

    dz/dt = A z + B phi(H z) + G u(t),    y = C z + v,

with phi(s) - phi(s') = delta (s - s') for some delta in [slope_low, slope_high] and every s, s'.
That slope bound holds globally, so the error dynamics of an observer that copies the model,
e = z - z_hat, satisfy de/dt = A e + B delta(t) H e + (correction terms): the nonlinearity enters
the error as a gain in an interval, which a linear matrix inequality (LMI) at the interval's two
ends certifies for every delta (components/sysid/certificate.py). Van der Pol's x1^2 x2 has no
such global bound, which is why the pendulum (phi = sin, slope in [-1, 1]) is the benchmark here.

A system is a plain object (float64 numpy arrays, torch twins on demand) with:
`state_dim`, `output_dim`, `A`, `B`, `G`, `H`, `C` (arrays), `slope_low`, `slope_high`,
`phi(s)` (numpy or torch, elementwise), `input(t)` (the known input, numpy or torch),
`sample_states(rng, n)` (initial true states), `field(z, t)` (dz/dt, numpy or torch, batched on
the leading axis) and `names` (the state names, for metric keys).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DisturbedPendulum:
    """A damped pendulum driven by a known torque and an unknown constant disturbance, as an
    extended state z = (angle, angular velocity, disturbance):

        d angle/dt = omega,  d omega/dt = -a sin(angle) - b omega + u(t) + d,  dd/dt = 0,

    with u(t) = torque sin(frequency t) known and d unknown (drawn per trajectory); the output is
    the angle, y = angle + v. In Lur'e form: phi = sin (slope in [-1, 1]), B = (0, -a, 0), H = C =
    (1, 0, 0). The extended state is observable from the angle (the disturbance shows in the
    angular acceleration).

    Args:
        gravity: a = g / l (rad/s^2).
        damping: b (1/s).
        torque: Amplitude of the known input u(t).
        frequency: Its angular frequency (rad/s).
        angle_range: Initial angles uniform in [-angle_range, angle_range].
        velocity_range: Initial angular velocities uniform in [-velocity_range, velocity_range].
        disturbance_range: The constant disturbance uniform in [-disturbance_range, disturbance_range].
    """

    names = ("angle", "velocity", "disturbance")

    def __init__(self, gravity: float = 4.0, damping: float = 0.3, torque: float = 1.0, frequency: float = 1.3,
                 angle_range: float = 2.5, velocity_range: float = 2.0, disturbance_range: float = 1.0) -> None:
        if gravity <= 0 or damping < 0 or min(angle_range, velocity_range, disturbance_range) < 0:
            raise ValueError(f"need gravity > 0, damping >= 0 and ranges >= 0; got {gravity}, {damping}, "
                             f"{angle_range}, {velocity_range}, {disturbance_range}")
        self.gravity, self.damping, self.torque, self.frequency = gravity, damping, torque, frequency
        self.ranges = np.array([angle_range, velocity_range, disturbance_range])
        self.state_dim, self.output_dim = 3, 1
        self.A = np.array([[0.0, 1.0, 0.0], [0.0, -damping, 1.0], [0.0, 0.0, 0.0]])
        self.B = np.array([[0.0], [-gravity], [0.0]])
        self.G = np.array([[0.0], [1.0], [0.0]])
        self.H = np.array([[1.0, 0.0, 0.0]])
        self.C = np.array([[1.0, 0.0, 0.0]])
        self.slope_low, self.slope_high = -1.0, 1.0

    def phi(self, s: Any) -> Any:
        return np.sin(s) if isinstance(s, np.ndarray) else s.sin()

    def input(self, t: Any) -> Any:
        return self.torque * (np.sin(self.frequency * t) if isinstance(t, (float, np.ndarray)) else
                              (self.frequency * t).sin())

    def sample_states(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, (n, self.state_dim)) * self.ranges

    def field(self, z: Any, t: Any) -> Any:
        """dz/dt for a batch z (..., 3) at time t (a float)."""
        if isinstance(z, np.ndarray):
            s = z @ self.H.T
            return z @ self.A.T + self.phi(s) @ self.B.T + self.input(float(t)) * self.G[:, 0]
        import torch

        A, B, G, H = (torch.as_tensor(m, dtype=z.dtype) for m in (self.A, self.B, self.G, self.H))
        return z @ A.T + self.phi(z @ H.T) @ B.T + float(self.input(float(t))) * G[:, 0]

    def linearization(self, slope: float = 1.0) -> np.ndarray:
        """A + slope B H: the Jacobian where phi' = slope (1 at the bottom, angle 0)."""
        return self.A + slope * self.B @ self.H


def rk4_trajectories(system: Any, z0: np.ndarray, dt: float, steps: int, substeps: int = 4) -> np.ndarray:
    """True states (n, steps + 1, dim) from z0 (n, dim) at times k dt, by classical RK4 with
    `substeps` steps per dt (numpy, float64)."""
    h = dt / substeps
    out = np.empty((z0.shape[0], steps + 1, z0.shape[1]))
    out[:, 0] = z = z0
    t = 0.0
    for k in range(steps):
        for _ in range(substeps):
            k1 = system.field(z, t)
            k2 = system.field(z + h / 2 * k1, t + h / 2)
            k3 = system.field(z + h / 2 * k2, t + h / 2)
            k4 = system.field(z + h * k3, t + h)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            t += h
        out[:, k + 1] = z
    if not np.isfinite(out).all():
        raise FloatingPointError(f"rk4_trajectories diverged (dt={dt}, substeps={substeps})")
    return out
