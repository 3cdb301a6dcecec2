"""Finite-rank skew-adjoint generators: the vector field of the neural ODE on the orthogonal group.

The generator is the integral operator (G_t f)(x) = int k(x, y, t) f(y) dy with the skew kernel
k(x, y, t) = sum_i a_i(x, t) b_i(y, t) - b_i(x, t) a_i(y, t) (rank 2 * pairs), where a and b are
small networks of (x, t). Skew kernel means G_t is skew-adjoint, so its flow is orthogonal. On the
span of a reference basis phi_1..phi_M its matrix is A(t)_mn = <phi_m, G_t phi_n> =
sum_i alpha_im beta_in - beta_im alpha_in with alpha_im = <phi_m, a_i(., t)>, beta likewise:
skew-symmetric by construction. The inner products use a fixed uniform quadrature grid of the
generator's own (`quadrature_points` per axis), so A(t), and the basis it generates, does not
depend on the grid the basis is later evaluated on.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn

from components.function_bases.bases import FourierBasis, periodic_grid
from components.types import NonNegativeInt, PositiveInt


class SkewFiniteRankNN(nn.Module):
    """Skew kernel sum_i a_i(x, t) b_i(y, t) - b_i(x, t) a_i(y, t) with a, b two MLPs of (x, t).

    Args:
        pairs: Number r of (a_i, b_i) pairs (the kernel has rank 2r; the paper: r = 1 is already
            universal).
        hidden: Width of each MLP's hidden layers (tanh).
        layers: Number of hidden layers.
        inputs: What the MLPs see of x: "fourier", the first `fourier_features` real Fourier functions
            of x (NOTES.md: without them spectral bias confines G to low frequencies), or
            "coordinates", x itself. t is appended in both cases.
        fourier_features: Number of Fourier input features (with inputs "fourier").
        dim: Dimension of the torus the functions live on (1 or 2).
        quadrature_points: Uniform grid points per axis for the inner products <phi_m, a_i>; exact for
            the reference's frequencies when above twice the highest frequency of phi and a_i.
        output_scale: Factor on the MLP outputs (sets the speed of the initial flow).
    """

    def __init__(
        self,
        pairs: int = 2,
        hidden: PositiveInt = 64,
        layers: PositiveInt = 1,
        inputs: Literal["fourier", "coordinates"] = "fourier",
        fourier_features: NonNegativeInt = 33,
        dim: PositiveInt = 1,
        quadrature_points: int = 128,
        output_scale: float = 1.0,
    ) -> None:
        super().__init__()
        for name, value in (("pairs", pairs), ("hidden", hidden), ("layers", layers),
                            ("fourier_features", fourier_features), ("quadrature_points", quadrature_points)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if inputs not in ("fourier", "coordinates"):
            raise ValueError(f"inputs must be 'fourier' or 'coordinates', got {inputs!r}")
        self.pairs, self.dim, self.inputs = pairs, dim, inputs
        self.output_scale = output_scale
        self.features = FourierBasis(fourier_features, dim) if inputs == "fourier" else None
        points, weights = periodic_grid(quadrature_points, dim)
        self.register_buffer("points", points)
        self.register_buffer("weights", weights)
        self.register_buffer("embedded", self.embed(points))  # the MLPs' inputs at the quadrature points, without t
        width = (fourier_features if inputs == "fourier" else dim) + 1
        self.a, self.b = self._mlp(width, hidden, layers, pairs), self._mlp(width, hidden, layers, pairs)

    @staticmethod
    def _mlp(width: int, hidden: int, layers: int, out: int) -> nn.Sequential:
        blocks: list[nn.Module] = []
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        return nn.Sequential(*blocks, nn.Linear(width, out))

    def embed(self, points: Tensor) -> Tensor:
        """The MLPs' view of x (without t): Fourier features, or x centred on the torus."""
        if self.features is not None:
            return self.features.values(points)
        return 2 * math.pi * (points - 0.5)

    def matrix(self, t: Tensor, reference_values: Tensor) -> Tensor:
        """A(t) (M x M, skew-symmetric) on the reference basis whose values at `self.points` are
        `reference_values` (n_q, M)."""
        x = self.embedded
        inputs = torch.cat([x, t.expand(x.shape[0], 1)], dim=1)
        weighted = reference_values * self.weights[:, None]
        alpha = weighted.T @ self.a(inputs) * self.output_scale  # (M, r): <phi_m, a_i>
        beta = weighted.T @ self.b(inputs) * self.output_scale
        return alpha @ beta.T - beta @ alpha.T
