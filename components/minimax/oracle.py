"""Data for algorithm studies without a dataset: the step indices of an iterative method.

An algorithm-study task (e.g. `minimax`) draws its own noisy oracle samples from the problem it
is given; the data module only sets the horizon and lets Lightning drive the loop, so that fit
makes `num_steps` iterations, `trainer.max_steps` / `limit_train_batches` shorten the run, and
test evaluates the final iterate once.
"""

from __future__ import annotations

import lightning as L
from torch.utils.data import DataLoader
from components.data.base import StepIndices
from components.types import PositiveInt


class OracleSteps(L.LightningDataModule):
    """One epoch of `num_steps` batches, each the (0-based) step index as a scalar tensor; test is
    a single batch (the task evaluates its final iterate there). No validation split: the task's
    metrics are exact (the gap), logged during fit at the steps the task chooses.

    Args:
        num_steps: Iterations per epoch, the horizon T of the algorithm (with `max_epochs: 1`).
    """

    def __init__(self, num_steps: PositiveInt) -> None:
        super().__init__()
        self.num_steps = num_steps

    def _loader(self, n: int) -> DataLoader:
        # batch_size=None: no collation, each batch is the index itself; no shuffling.
        return DataLoader(StepIndices(n), batch_size=None, shuffle=False)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.num_steps)


    def test_dataloader(self) -> DataLoader:
        return self._loader(1)
