"""Data for online learning: parallel, time-ordered streams, yielded block by block in time order.

A stream data module holds S streams of up to T time steps as arrays (S, T, ...), float64; a
`mask` (S, T) marks the steps a stream has (streams may have different lengths: engines of
different lives, horizons of a fixed-horizon study). Training yields consecutive blocks of
`block` time steps, never shuffled, so an online task (a `PlainLoop`) sees every stream in time
order, one block per training step; test is one batch (the task reports what it accumulated).
Each stream belongs to a named group (`groups`, `group_of`): the unit over which a task averages
its metrics (e.g. one drift rate and horizon, with its replicate streams).
"""

from __future__ import annotations

import math

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from components.data.base import keep_batch

Streams = dict[str, np.ndarray]


class _Blocks(Dataset):
    def __init__(self, tensors: dict[str, torch.Tensor], block: int) -> None:
        self.tensors, self.block = tensors, block
        self.length = next(iter(tensors.values())).shape[1]

    def __len__(self) -> int:
        return math.ceil(self.length / self.block)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        window = slice(index * self.block, (index + 1) * self.block)
        return {k: v[:, window] for k, v in self.tensors.items()}


class StreamData(L.LightningDataModule):
    """Base of stream data modules (module docstring). A subclass implements `make_streams()`,
    returning (arrays, group names, group index of each stream): arrays with a leading (S, T)
    shape, at least `x` (S, T, d) regressors, `y` (S, T) targets and `mask` (S, T) bool.

    Args:
        block: Time steps per training batch (the last block may be shorter). Larger blocks mean
            fewer Lightning steps; the online task runs the same loop either way.
    """

    def __init__(self, block: int = 1000) -> None:
        super().__init__()
        if block < 1:
            raise ValueError(f"block must be >= 1 time step, got {block}")
        self.block = block
        self._streams: dict[str, torch.Tensor] | None = None
        self.groups: list[str] = []
        self.group_of = np.zeros(0, dtype=np.int64)

    def make_streams(self) -> tuple[Streams, list[str], np.ndarray]:
        raise NotImplementedError

    @property
    def streams(self) -> dict[str, torch.Tensor]:
        """The arrays as tensors (float64, `mask` bool), made on first use."""
        if self._streams is None:
            arrays, groups, group_of = self.make_streams()
            missing = {"x", "y", "mask"} - set(arrays)
            if missing:
                raise ValueError(f"{type(self).__name__}.make_streams() gave no {sorted(missing)}")
            shape = arrays["mask"].shape
            bad = {k: v.shape for k, v in arrays.items() if v.shape[:2] != shape}
            if bad or len(group_of) != shape[0]:
                raise ValueError(f"stream arrays must share the (streams, time) shape {shape}: {bad}, "
                                 f"{len(group_of)} group indices")
            self._streams = {k: torch.as_tensor(v, dtype=torch.bool if k == "mask" else torch.float64)
                             for k, v in arrays.items()}
            self.groups, self.group_of = list(groups), np.asarray(group_of, dtype=np.int64)
        return self._streams

    def setup(self, stage: str | None = None) -> None:
        self.streams  # noqa: B018 - make them once, before the loaders

    def info(self) -> dict[str, int]:
        streams = self.streams
        return {"streams": int(streams["mask"].shape[0]), "steps": int(streams["mask"].shape[1]),
                "in_features": int(streams["x"].shape[2])}

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_Blocks(self.streams, self.block), batch_size=None, shuffle=False, collate_fn=keep_batch)

    def test_dataloader(self) -> DataLoader:
        # One batch: the task reports the metrics it accumulated during fit.
        return DataLoader([torch.tensor(int(self.streams["mask"].shape[1]))], batch_size=None)
