"""Feature maps for linear attention: phi(x) with phi(q) . phi(k) >= 0 standing in for a kernel.

A feature map is built by a factory the attention calls with `head_dim` (the width of one head's
query/key); it maps (..., head_dim) -> (..., num_features) and every pair of features has a
non-negative inner product, so causal linear attention's normalizer stays positive.

- `elu1` (Katharopoulos et al. 2020): phi(x) = elu(x) + 1, head_dim features; no kernel it
  approximates.
- `polysketch_random` (PolySketchFormer, Kacham et al. 2024): approximates the polynomial kernel
  (q . k)^p, p even. A degree-p/2 product sketch S(x) = r^(-1/2) prod_j (G_j x) (Hadamard product
  of p/2 Gaussian projections G_j in R^{r x d}) is unbiased for (q . k)^(p/2); self-tensoring
  phi(x) = S(x) (x) S(x) gives phi(q) . phi(k) = (S(q) . S(k))^2 >= 0, r^2 features, which
  approximates (q . k)^p. The projections are drawn once from `seed` and frozen.
- `llops_learned` (LLoPS, the llops paper): the same low-rank product sketch with *learned*
  projections (initialised as a random sketch from `seed`), fitted to the kernel (the
  `kernel_approximation` task) or end to end with the model.
"""

from __future__ import annotations

import math
from typing import Annotated

import torch
import torch.nn.functional as F
from annotated_types import Ge
from torch import nn

from components.types import PositiveInt


class Elu1(nn.Module):
    """phi(x) = elu(x) + 1 (linear transformers, Katharopoulos et al. 2020): positive features,
    as many as the head's width.

    Args:
        head_dim: Width of a head's queries and keys (supplied by the attention).
    """

    def __init__(self, head_dim: PositiveInt) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.num_features = head_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x) + 1.0


def _check_degree(degree: int) -> None:
    if degree % 2:
        raise ValueError(f"degree must be even (a self-tensored sketch of degree p/2), got {degree}")


class _SelfTensoredSketch(nn.Module):
    """phi(x) = S(x) (x) S(x), S(x) = r^(-1/2) prod_{j < p/2} (G_j x): r^2 features whose inner
    product is (S(q) . S(k))^2 ~ (q . k)^p. `projections` is (p/2, r, head_dim)."""

    def __init__(self, head_dim: int, degree: int, rank: int, seed: int) -> None:
        super().__init__()
        _check_degree(degree)
        self.head_dim, self.degree, self.rank = head_dim, degree, rank
        self.num_features = rank * rank

    @staticmethod
    def gaussian(head_dim: int, degree: int, rank: int, seed: int) -> torch.Tensor:
        """The random sketch's projections G: (degree / 2, rank, head_dim), N(0, 1), from `seed`."""
        generator = torch.Generator().manual_seed(seed)
        return torch.randn(degree // 2, rank, head_dim, generator=generator)

    def sketch(self, x: torch.Tensor) -> torch.Tensor:
        """S(x): (..., head_dim) -> (..., rank), unbiased for the degree-p/2 kernel when G is Gaussian."""
        g = self.projections.to(x.dtype)
        factors = torch.einsum("...d,jrd->j...r", x, g)
        return factors.prod(dim=0) / math.sqrt(self.rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.sketch(x)
        return (s.unsqueeze(-1) * s.unsqueeze(-2)).flatten(-2)


class PolySketchRandom(_SelfTensoredSketch):
    """PolySketchFormer's random sketch of (q . k)^degree (module docstring): Gaussian projections
    drawn from `seed`, frozen (a buffer, not a parameter).

    Args:
        head_dim: Width of a head's queries and keys (supplied by the attention).
        degree: Even polynomial degree p of the kernel approximated.
        rank: Projections per factor r; the map has r^2 features.
        seed: Seed of the projections.
    """

    def __init__(self, head_dim: PositiveInt, degree: Annotated[int, Ge(2)] = 4, rank: PositiveInt = 8,
                 seed: int = 0) -> None:
        super().__init__(head_dim, degree, rank, seed)
        self.register_buffer("projections", self.gaussian(head_dim, degree, rank, seed))


class LLoPSLearned(_SelfTensoredSketch):
    """LLoPS: the self-tensored low-rank product sketch of (q . k)^degree with learned projections
    (module docstring), initialised as `polysketch_random` with the same seed. Non-negative by
    construction whatever the learned values.

    Args:
        head_dim: Width of a head's queries and keys (supplied by the attention).
        degree: Even polynomial degree p of the kernel approximated.
        rank: Learned projections per factor r; the map has r^2 features.
        seed: Seed of the initial projections.
    """

    def __init__(self, head_dim: PositiveInt, degree: Annotated[int, Ge(2)] = 4, rank: PositiveInt = 8,
                 seed: int = 0) -> None:
        super().__init__(head_dim, degree, rank, seed)
        self.projections = nn.Parameter(self.gaussian(head_dim, degree, rank, seed))
