"""Cost of a loss component as a function of the batch size: a generic profiling task.

Used by cvm_fairness (CvM's O(B log B) against HSIC's O(B^2)), and by any paper whose claim is a
per-batch cost. For each batch size B it draws random binary-classifier logits (B, 2) and a
random binary group, then measures forward+backward of the spec's loss:

- `test/ms_b<B>`: best wall time of `repeats` runs (machine-dependent, logged for reading);
- `test/saved_mb_b<B>`: megabytes autograd saves for the backward pass (deterministic: the
  memory the loss costs per batch);
- `test/time_exponent`, `test/memory_exponent`: least-squares slopes of log cost against log B
  (1 for linear cost, 2 for quadratic).
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any

import lightning as L
import torch
from annotated_types import Ge, MinLen
from torch.utils.data import DataLoader
from components.types import PositiveInt


def _loglog_slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-12)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


class LossProfile(L.LightningModule):
    """Profiles the spec's `loss` over batch sizes (test phase only; no model, no data needed).

    Args:
        loss: The loss component (runtime, from the spec's `loss:`), called as loss(outputs, batch).
        batch_sizes: Batch sizes to measure, at least two for the exponents.
        repeats: Timed repetitions per size (best is kept) after one warm-up.
        seed: Seed of the random logits and groups.
    """

    def __init__(self, loss: Any, batch_sizes: Annotated[list[Annotated[int, Ge(2)]], MinLen(2)] = [512, 1024, 2048, 4096],
                 repeats: PositiveInt = 3, seed: int = 0) -> None:
        super().__init__()
        self.loss, self.batch_sizes, self.repeats, self.seed = loss, list(batch_sizes), repeats, seed

    def _inputs(self, size: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        generator = torch.Generator().manual_seed(self.seed + size)
        group = torch.randint(0, 2, (size,), generator=generator)
        logits = torch.randn(size, 2, generator=generator) + group[:, None] * torch.tensor([0.0, 1.0])
        y = (logits[:, 1] > logits[:, 0]).long()
        return logits.requires_grad_(True), {"y": y, "group": group}

    def _saved_bytes(self, size: int) -> int:
        total = 0

        def pack(tensor: torch.Tensor) -> torch.Tensor:
            nonlocal total
            total += tensor.numel() * tensor.element_size()
            return tensor

        logits, batch = self._inputs(size)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            value = self.loss(logits, batch)
        value.backward()
        return total

    def _seconds(self, size: int) -> float:
        best = math.inf
        for attempt in range(self.repeats + 1):
            logits, batch = self._inputs(size)
            start = time.perf_counter()
            self.loss(logits, batch).backward()
            if attempt:  # the first is a warm-up
                best = min(best, time.perf_counter() - start)
        return best

    def test_step(self, batch: Any, batch_idx: int) -> None:
        times, saved = [], []
        for size in self.batch_sizes:
            with torch.inference_mode(False), torch.enable_grad():  # test runs under inference mode
                saved.append(self._saved_bytes(size) / 2**20)
                times.append(self._seconds(size) * 1e3)
            self.log(f"test/ms_b{size}", times[-1])
            self.log(f"test/saved_mb_b{size}", saved[-1])
        self.log("test/time_exponent", _loglog_slope(self.batch_sizes, times))
        self.log("test/memory_exponent", _loglog_slope(self.batch_sizes, saved))

    def test_dataloader(self) -> DataLoader:
        return DataLoader([0], batch_size=1)  # one step: the work is in test_step
