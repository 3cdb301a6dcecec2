"""Bases as models: a learned basis (the endpoint of a flow on the orthogonal group) and a fixed
reference basis (the baseline). Both answer `evaluate(points, derivatives)` with the values (n, M)
and optionally the gradients (n, M, dim) of their M functions, and hold `reference`, the fixed
basis whose span they live in (for the in-span optimum an objective compares with).
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
from torch import Tensor, nn

from components.kinds import Kind

ReferenceBasis = Annotated[Any, Kind("reference_bases")]
SkewGenerator = Annotated[Any, Kind("skew_generators")]
Integrator = Annotated[Any, Kind("integrators")]


class LieBasis(nn.Module):
    """Phi(1) = Phi_ref Q(1), where Q solves dQ/dt = A_theta(t) Q, Q(0) = I on the orthogonal group.

    A_theta(t) is the skew matrix of a finite-rank skew-adjoint integral operator (the generator) on
    the reference span, so Q(1) is orthogonal and Phi(1) is orthonormal whenever Phi_ref is: by
    construction, not by a penalty. The basis is a set of functions: evaluated on any grid where
    the reference is orthonormal, it is orthonormal there.

    Args:
        reference: The starting basis Phi_ref (e.g. Fourier).
        generator: The skew generator; its input dimension must match the reference's.
        integrator: The ODE scheme over t in [0, 1] (`cayley`, `matrix_exp` keep Q orthogonal to
            round-off; `rk4` does not).
    """

    def __init__(self, reference: ReferenceBasis, generator: SkewGenerator, integrator: Integrator) -> None:
        super().__init__()
        if generator.dim != reference.dim:
            raise ValueError(f"generator.dim ({generator.dim}) must equal reference.dim ({reference.dim})")
        self.reference, self.generator, self.integrator = reference, generator, integrator
        self.size, self.dim = reference.size, reference.dim
        self.register_buffer("reference_on_quadrature", reference.values(generator.points))

    def rotation(self) -> Tensor:
        """Q(1), an M x M orthogonal matrix (to the integrator's accuracy)."""
        q0 = self.reference_on_quadrature
        eye = torch.eye(self.size, dtype=q0.dtype, device=q0.device)
        return self.integrator.integrate(lambda t: self.generator.matrix(t, q0), eye)

    @torch.no_grad()
    def generator_rank(self, times: int = 21) -> int:
        """The largest numerical rank of A_theta(t) over `times` equally spaced t in [0, 1]: measured,
        not read from the config (2 * pairs unless the networks' outputs are degenerate)."""
        q0 = self.reference_on_quadrature
        grid = torch.linspace(0.0, 1.0, times, dtype=q0.dtype, device=q0.device)
        return max(int(torch.linalg.matrix_rank(self.generator.matrix(t, q0))) for t in grid)

    def evaluate(self, points: Tensor, derivatives: bool = False) -> tuple[Tensor, Tensor | None]:
        """(values (n, M), gradients (n, M, dim) or None) of Phi(1) at points (n, dim)."""
        q = self.rotation()
        values, grads = self.reference.evaluate(points, derivatives)
        return values @ q, (None if grads is None else torch.einsum("nmd,mk->nkd", grads, q))


class FixedBasis(nn.Module):
    """A reference basis used as it is (no parameters): the baseline a learned basis is compared with.

    Args:
        reference: The basis (e.g. the first M Fourier functions).
    """

    def __init__(self, reference: ReferenceBasis) -> None:
        super().__init__()
        self.reference = reference
        self.size, self.dim = reference.size, reference.dim

    def generator_rank(self) -> int:
        """0: no generator moves a fixed basis."""
        return 0

    def evaluate(self, points: Tensor, derivatives: bool = False) -> tuple[Tensor, Tensor | None]:
        """The reference's values and gradients at points (n, dim)."""
        return self.reference.evaluate(points, derivatives)
