"""Training batches drawn from a mixture of sources by a fixed ratio, after an optional warm-up on one.

`MixtureSchedule` says which source training step i draws from: the `warmup_source` for steps
i < `warmup_steps` (a pretraining stage, e.g. behaviour-only pretraining in beemo), then a draw
with probability proportional to `weights` from a generator seeded by (seed, i), so a resumed run
draws the same sequence. `MixedBatches` is the step-indexed dataset of such a mixture: batch i is
`sources[schedule.source(i)](i)`. Usable by any paper that mixes data streams (paired and unpaired
recordings, fresh data and a replay buffer, target and anchor data).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils.data import Dataset


class MixtureSchedule:
    """Which source each training step draws from (module docstring).

    Args:
        weights: Source name -> non-negative weight (normalized; at least one positive).
        seed: Seeds the per-step draws.
        warmup_source: The source of the first `warmup_steps` steps (None: no warm-up).
        warmup_steps: Steps drawn from `warmup_source` only.
    """

    def __init__(self, weights: dict[str, float], seed: int = 0, warmup_source: str | None = None,
                 warmup_steps: int = 0) -> None:
        if not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError(f"weights must be non-negative with a positive sum, got {weights}")
        if warmup_steps and warmup_source is None:
            raise ValueError("warmup_steps > 0 needs a warmup_source")
        self.names = list(weights)
        self.probabilities = torch.tensor([float(weights[n]) for n in self.names], dtype=torch.float64)
        self.probabilities /= self.probabilities.sum()
        self.seed, self.warmup_source, self.warmup_steps = seed, warmup_source, warmup_steps

    def source(self, index: int) -> str:
        if index < self.warmup_steps:
            return self.warmup_source
        positive = [n for n, p in zip(self.names, self.probabilities) if p > 0]
        if len(positive) == 1:
            return positive[0]
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        return self.names[int(torch.multinomial(self.probabilities, 1, generator=gen))]

    def counts(self, steps: int) -> dict[str, int]:
        """How many of the first `steps` steps each source serves."""
        drawn = [self.source(i) for i in range(steps)]
        return {n: drawn.count(n) for n in self.names + ([self.warmup_source] if self.warmup_source else [])}


class MixedBatches(Dataset):
    """Step-indexed batches of a mixture: item i is sources[schedule.source(i)](i) (load it with
    `batch_size=None`)."""

    def __init__(self, schedule: MixtureSchedule, sources: dict[str, Callable[[int], Any]], steps: int) -> None:
        missing = {n for n in schedule.names if n not in sources} | (
            {schedule.warmup_source} - set(sources) if schedule.warmup_source else set())
        if missing:
            raise ValueError(f"no source for {sorted(missing)}")
        self.schedule, self.sources, self.steps = schedule, sources, steps

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> Any:
        return self.sources[self.schedule.source(int(index))](int(index))
