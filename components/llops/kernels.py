"""How well a feature map approximates the polynomial kernel it stands for (llops' first result).

The data (`query_key_pairs`) are anisotropic queries and keys, as a trained model's are: x = z * s
with z ~ N(0, I_d) and per-axis scales s_i proportional to (i + 1)^(-decay), normalised so that
E|x|^2 = 1. The task (`kernel_approximation`) compares the feature-map kernel
Khat = phi(Q) phi(K)^T with the exact polynomial kernel K = (Q K^T)^p (p the feature map's
`degree`) over all query-key pairs of a batch:

    relative error = |Khat - K|_F / |K|_F.

A learned map (`llops_learned`) is fitted by gradient steps on the squared relative error over the
training pairs; a random one (`polysketch_random`) is only tested (`phases: [test]`).
Logged keys: `train/loss` (squared relative error) per step; `test/kernel_rel_error` on the
held-out pairs, and `test/num_features`.
"""

from __future__ import annotations

from typing import Any, Callable

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from components.sequence.attention import FeatureMap
from components.tasks.supervised import optimizers_config
from components.types import NonNegativeFloat, PositiveInt


def kernel_rel_error(khat: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|khat - exact|_F / |exact|_F."""
    return torch.linalg.norm(khat - exact) / torch.linalg.norm(exact)


def anisotropic_vectors(generator: torch.Generator, count: int, dim: int, decay: float) -> torch.Tensor:
    """`count` vectors z * s, z ~ N(0, I), s_i ~ (i + 1)^(-decay) with sum s_i^2 = 1 (E|x|^2 = 1)."""
    scales = torch.arange(1, dim + 1, dtype=torch.float64) ** (-decay)
    scales = scales / scales.norm()
    return (torch.randn(count, dim, generator=generator, dtype=torch.float64) * scales).float()


class _Repeat(Dataset):
    def __init__(self, batch: dict[str, torch.Tensor], times: int) -> None:
        self.batch, self.times = batch, times

    def __len__(self) -> int:
        return self.times

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.batch


class QueryKeyPairs(L.LightningDataModule):
    """Anisotropic queries and keys (module docstring), one full batch each for train and test.

    Args:
        dim: Width of a query or key (the feature map's head_dim).
        num_train: Training queries (and as many keys).
        num_test: Held-out queries (and as many keys), drawn after the training ones.
        decay: Exponent of the per-axis scales; 0 is isotropic.
        train_steps: Full-batch steps per epoch (the training batch repeated).
        seed: Seed of the vectors.
    """

    def __init__(self, dim: PositiveInt = 32, num_train: PositiveInt = 512, num_test: PositiveInt = 512,
                 decay: NonNegativeFloat = 1.0, train_steps: PositiveInt = 500, seed: int = 0) -> None:
        super().__init__()
        self.dim, self.decay, self.train_steps = dim, decay, train_steps
        generator = torch.Generator().manual_seed(seed)
        self.train = {name: anisotropic_vectors(generator, num_train, dim, decay) for name in ("q", "k")}
        self.test = {name: anisotropic_vectors(generator, num_test, dim, decay) for name in ("q", "k")}

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_Repeat(self.train, self.train_steps), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(_Repeat(self.test, 1), batch_size=None)


class KernelApproximation(L.LightningModule):
    """Fits (or only tests) a feature map against the exact polynomial kernel (module docstring).

    Args:
        feature_map: The feature map node, built with head_dim; must approximate a polynomial
            kernel (have a `degree`).
        head_dim: Width of the queries and keys (the data's dim).
        optimizer: Factory called with the feature map's parameters; omitted for a test-only run
            of a fixed map (`phases: [test]`).
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
    """

    def __init__(
        self,
        feature_map: FeatureMap,
        head_dim: PositiveInt = 32,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self.feature_map = feature_map(head_dim=head_dim)
        self.degree = getattr(self.feature_map, "degree", None)
        if self.degree is None:
            raise ValueError(f"feature_map {type(self.feature_map).__name__} approximates no polynomial kernel "
                             f"(it has no degree); use polysketch_random or llops_learned")
        self.head_dim = head_dim
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler

    def errors(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        q, k = batch["q"], batch["k"]
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"kernel_approximation: head_dim is {self.head_dim} but the data's vectors have "
                             f"dim {q.shape[-1]}")
        return kernel_rel_error(self.feature_map(q) @ self.feature_map(k).T, (q @ k.T) ** self.degree)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self.errors(batch) ** 2
        self.log("train/loss", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=1)
        return loss

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.log("test/kernel_rel_error", self.errors(batch), batch_size=1)
        self.log("test/num_features", float(self.feature_map.num_features), batch_size=1)

    def configure_optimizers(self) -> Any:
        if self.optimizer_factory is None:
            raise ValueError("fitting a feature map needs an `optimizer:` section (a fixed map is tested with "
                             "`phases: [test]`)")
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)
