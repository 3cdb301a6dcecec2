"""A neural-network observer of a Lur'e system (components/sysid/systems.py) and its simulation.

The observer copies the model and corrects it with the innovation y~ = y - C z_hat:

    dz_hat/dt = A z_hat + B phi(H z_hat) + G u(t) + c(y~),
    c(y~) = L y~ + W2 [tanh(W1 y~ + b) - tanh(b)]

a linear (Luenberger) gain L plus a one-hidden-layer tanh network of the innovation, which is 0 at
y~ = 0 (so the true state is an equilibrium of the error dynamics). Because the network reads the
innovation only, its effect on the error is a sector-bounded term and the global Lyapunov
certificate is an LMI (components/sysid/certificate.py). `L` is a Luenberger observer when
the network's output layer is zero; the open-loop copy of the model is L = 0, W2 = 0.

The Lyapunov matrix of the point-guided pre-training, P = R R' + I (positive definite), is a
parameter of the model too, so that pre-training learns it with the gains; the LMI stage solves
for its own P.

`simulate` integrates the observer over recorded measurements by classical RK4 with each
measurement held over its sampling interval (a sampled output, as on a real sensor); it is
differentiable, which is what the pre-training and the gradient steps of both LMI methods use.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from components.types import PositiveInt


class NNObserver(nn.Module):
    """Weights of the observer of the module docstring (float64), for a system with `state_dim`
    states and `output_dim` outputs.

    Args:
        state_dim: n, the (extended) state dimension.
        output_dim: p, the output dimension.
        hidden: Width of the tanh layer.
        init_scale: Standard deviation of the initial W1 (per input) and W2; b ~ N(0, 1).
        gain: Initial L, one row per state (p columns), or None for zeros.
    """

    def __init__(self, state_dim: PositiveInt = 3, output_dim: PositiveInt = 1, hidden: PositiveInt = 16,
                 init_scale: float = 0.3, gain: list[list[float]] | None = None) -> None:
        super().__init__()
        n, p, h = state_dim, output_dim, hidden
        self.state_dim, self.output_dim, self.hidden = n, p, h
        g = torch.zeros(n, p, dtype=torch.float64) if gain is None else torch.tensor(gain, dtype=torch.float64)
        if g.shape != (n, p):
            raise ValueError(f"gain must be {n} rows of {p}, got shape {tuple(g.shape)}")
        self.L = nn.Parameter(g)
        self.W1 = nn.Parameter(init_scale * torch.randn(h, p, dtype=torch.float64))
        self.b = nn.Parameter(torch.randn(h, dtype=torch.float64))
        self.W2 = nn.Parameter(init_scale * torch.randn(n, h, dtype=torch.float64) / h**0.5)
        self.R = nn.Parameter(torch.zeros(n, n, dtype=torch.float64))
        # cost of the training so far, carried across stages by `init:` (checkpointed buffers)
        self.register_buffer("gradient_steps", torch.zeros((), dtype=torch.float64))
        self.register_buffer("sdp_solves", torch.zeros((), dtype=torch.float64))
        self.register_buffer("sdp_iterations", torch.zeros((), dtype=torch.float64))
        self.register_buffer("cpu_seconds", torch.zeros((), dtype=torch.float64))

    def correction(self, innovation: Tensor) -> Tensor:
        """c(y~) for innovations (..., p) -> (..., n)."""
        w = torch.tanh(innovation @ self.W1.T + self.b) - torch.tanh(self.b)
        return innovation @ self.L.T + w @ self.W2.T

    def lyapunov(self) -> Tensor:
        return self.R @ self.R.T + torch.eye(self.state_dim, dtype=self.R.dtype)

    def arrays(self) -> dict[str, np.ndarray]:
        """L, W1, W2 as numpy arrays (the certificate's inputs)."""
        return {k: getattr(self, k).detach().numpy().copy() for k in ("L", "W1", "W2")}

    def set_gains(self, L: np.ndarray, W2: np.ndarray) -> None:
        with torch.no_grad():
            self.L.copy_(torch.as_tensor(L))
            self.W2.copy_(torch.as_tensor(W2))


def _matrices(system, dtype: torch.dtype) -> dict[str, Tensor]:
    return {k: torch.as_tensor(getattr(system, k), dtype=dtype) for k in ("A", "B", "G", "H", "C")}


def simulate(system, correction, y: Tensor, dt: float, z0: Tensor | None = None) -> Tensor:
    """Observer estimates (batch, K + 1, n) from measurements y (batch, K + 1, p) sampled every dt,
    one RK4 step per interval with y held; `correction(innovation) -> (..., n)`; z_hat(0) = z0 or 0."""
    m = _matrices(system, y.dtype)
    batch, count = y.shape[0], y.shape[1] - 1
    z = torch.zeros(batch, m["A"].shape[0], dtype=y.dtype) if z0 is None else z0
    out = [z]

    def field(z: Tensor, t: float, yk: Tensor) -> Tensor:
        return (z @ m["A"].T + system.phi(z @ m["H"].T) @ m["B"].T + float(system.input(t)) * m["G"][:, 0]
                + correction(yk - z @ m["C"].T))

    for k in range(count):
        t, yk = k * dt, y[:, k]
        k1 = field(z, t, yk)
        k2 = field(z + dt / 2 * k1, t + dt / 2, yk)
        k3 = field(z + dt / 2 * k2, t + dt / 2, yk)
        k4 = field(z + dt * k3, t + dt, yk)
        z = z + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(z)
    return torch.stack(out, dim=1)


def linear_correction(L: np.ndarray):
    """The correction of a Luenberger observer (L y~), or of the open-loop copy (L = 0)."""
    gain = torch.as_tensor(L, dtype=torch.float64)
    return lambda innovation: innovation @ gain.T


def rmse(estimate: Tensor, truth: Tensor) -> float:
    """Root mean square error over trajectories, times and states."""
    return float(((estimate - truth) ** 2).mean().sqrt())
