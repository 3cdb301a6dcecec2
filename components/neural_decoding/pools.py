"""Paired (neural + behaviour) and unpaired (behaviour-only) trial pools, mixed by a ratio: the
common part of beemo's data modules (`reach_sessions` simulates the pools, `nwb_reaches` reads them
from NWB files).

A subclass fills `self.pools` in `setup()`: "paired", "val", "test" ({"behavior" (n, T, c),
"spikes" (n, T, max_units), "session" (n,)}) and "unpaired" ({"behavior"}), and says `info()`.
Training batches come from `MixedBatches` (components/data/mixture.py): `iterations` steps, the
first `pretrain_steps` unpaired (behaviour-only pretraining), then paired with probability
`paired_fraction`; each batch is `batch_size` trials drawn with replacement from its pool by a
generator seeded by (seed, step), so a resumed run draws the same batches.
"""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader

from components.data.base import ResumableLoader, keep_batch
from components.data.mixture import MixedBatches, MixtureSchedule


class PairedUnpairedPools(L.LightningDataModule):
    """Pools of paired and unpaired trials and their mixture (module docstring)."""

    def __init__(self, paired_fraction: float, pretrain_steps: int, iterations: int, batch_size: int,
                 seed: int) -> None:
        super().__init__()
        self.schedule = MixtureSchedule({"paired": paired_fraction, "unpaired": 1 - paired_fraction}, seed,
                                        "unpaired" if pretrain_steps else None, pretrain_steps)
        self.iterations, self.batch_size, self.seed = iterations, batch_size, seed
        self.pools: dict[str, dict[str, torch.Tensor]] = {}

    def split(self, name: str) -> dict[str, torch.Tensor]:
        """A whole pool: paired, unpaired, val or test."""
        self.setup()
        return self.pools[name]

    def draw(self, pool: str, index: int) -> dict[str, torch.Tensor]:
        """Training batch `index` drawn from `pool`."""
        data = self.pools[pool]
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index + 7)
        rows = torch.randint(len(data["behavior"]), (self.batch_size,), generator=gen)
        return {k: v[rows] for k, v in data.items()}

    def train_dataloader(self) -> DataLoader:
        self.setup()
        sources = {name: (lambda i, name=name: self.draw(name, i)) for name in ("paired", "unpaired")}
        return ResumableLoader(MixedBatches(self.schedule, sources, self.iterations), batch_size=None,
                               collate_fn=keep_batch)

    def test_dataloader(self) -> DataLoader:
        return DataLoader([{"index": torch.tensor(0)}], batch_size=None, collate_fn=keep_batch)
