"""Fixed-step integrators of a linear matrix ODE dY/dt = A(t) Y on [t0, t1] (a neural ODE whose
vector field is a matrix the network produces at each time).

On the orthogonal group (A(t) skew-symmetric, Y(0) orthogonal) the exact flow stays orthogonal.
`cayley` and `matrix_exp` keep that property in every step up to round-off (each step multiplies
Y by an orthogonal matrix), whatever the step size; `rk4` is the classical Runge-Kutta scheme,
accurate to O(h^4) but not structure-preserving, so its Y drifts off the group by its local error.
Each scheme evaluates the field at the times it needs and is differentiable (backpropagation
through the steps).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from components.types import PositiveInt

Field = Callable[[Tensor], Tensor]


class _FixedStep:
    """Shared step loop: `steps` equal steps h = (t1 - t0) / steps from Y(t0) = y0."""

    preserves_orthogonality = False

    def __init__(self, steps: PositiveInt = 20) -> None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self.steps = steps

    def integrate(self, field: Field, y0: Tensor, t0: float = 0.0, t1: float = 1.0) -> Tensor:
        """Y(t1) for dY/dt = field(t) Y, Y(t0) = y0; field(t) takes a 0-d tensor of y0's dtype."""
        h = (t1 - t0) / self.steps
        y = y0
        for n in range(self.steps):
            y = self.step(field, y, t0 + n * h, h)
        return y

    def step(self, field: Field, y: Tensor, t: float, h: float) -> Tensor:
        raise NotImplementedError


def _time(t: float, like: Tensor) -> Tensor:
    return torch.tensor(t, dtype=like.dtype, device=like.device)


class Cayley(_FixedStep):
    """Cayley (implicit midpoint) steps: Y <- (I - h/2 A)^-1 (I + h/2 A) Y with A = A(t + h/2).

    The Cayley transform of a skew matrix is orthogonal, so Y stays on the orthogonal group to
    round-off; second order in h.

    Args:
        steps: Number of equal steps over [t0, t1].
    """

    preserves_orthogonality = True

    def step(self, field: Field, y: Tensor, t: float, h: float) -> Tensor:
        a = field(_time(t + h / 2, y)) * (h / 2)
        eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        return torch.linalg.solve(eye - a, (eye + a) @ y)


class MatrixExp(_FixedStep):
    """Exponential midpoint steps (first Magnus term): Y <- expm(h A(t + h/2)) Y.

    The exponential of a skew matrix is orthogonal, so Y stays on the group to round-off; second
    order in h.

    Args:
        steps: Number of equal steps over [t0, t1].
    """

    preserves_orthogonality = True

    def step(self, field: Field, y: Tensor, t: float, h: float) -> Tensor:
        return torch.linalg.matrix_exp(h * field(_time(t + h / 2, y))) @ y


class RK4(_FixedStep):
    """Classical fourth-order Runge-Kutta steps on dY/dt = A(t) Y.

    Not structure-preserving: Y leaves the orthogonal group by the scheme's local error
    O((h |A|)^5) per step (a baseline for the structure-preserving schemes).

    Args:
        steps: Number of equal steps over [t0, t1].
    """

    def step(self, field: Field, y: Tensor, t: float, h: float) -> Tensor:
        a0, a_mid, a1 = field(_time(t, y)), field(_time(t + h / 2, y)), field(_time(t + h, y))
        k1 = a0 @ y
        k2 = a_mid @ (y + h / 2 * k1)
        k3 = a_mid @ (y + h / 2 * k2)
        k4 = a1 @ (y + h * k3)
        return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
