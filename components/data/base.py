"""Shared machinery for data modules whose whole dataset fits in memory as arrays.

A subclass implements `load()`, returning either one pool of arrays, which is split here into
train/val/test with a seeded permutation, or ready-made splits. Batches are dicts of tensors
("x", "y", optionally "group"), fetched in one indexing operation per batch.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.fabric.utilities.seed import _collect_rng_states, _set_rng_states
from torch.utils.data import DataLoader, Dataset, Sampler
from components.local_assets import local_path  # noqa: F401  (the data modules' import)
from components.types import NonNegativeInt, PositiveInt, ProperFraction



Arrays = dict[str, np.ndarray]
SPLITS = ("train", "val", "test")


class StepIndices(Dataset):
    """Items 0..n-1, each its index as a scalar tensor: the batches of a task that draws its own
    data (a plain optimization loop, a simulator), with `batch_size=None`."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(index)


class TensorDictDataset(Dataset):
    """Rows of same-length tensors; `__getitems__` returns a whole batch as one dict."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        lengths = {len(t) for t in tensors.values()}
        if len(lengths) != 1:
            raise ValueError(f"all arrays need the same length, got { {k: len(v) for k, v in tensors.items()} }")
        self.tensors = tensors
        self.length = lengths.pop()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {k: v[index] for k, v in self.tensors.items()}

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        index = torch.as_tensor(indices)
        return {k: v[index] for k, v in self.tensors.items()}


class EpochShuffle(Sampler[int]):
    """A permutation drawn from (seed, epoch) alone, not from the global RNG: a resumed run sees
    the same order as an uninterrupted one (mid-epoch, `ResumableLoader` skips what was trained). Lightning calls
    `set_epoch` at the start of every epoch (as it does for DistributedSampler)."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed((self.seed * 100_003 + self.epoch) % (1 << 63))
        return iter(torch.randperm(self.size, generator=generator).tolist())

    def __len__(self) -> int:
        return self.size


class ResumableLoader(DataLoader):
    """A DataLoader whose place in the epoch is part of Lightning's checkpoint (Lightning saves
    the `state_dict` of a train loader that has one, and loads it before iterating again): a run
    resumed from a checkpoint written mid-epoch continues with the batch after the last one it
    trained on, in the same order, instead of starting the epoch over.

    The state is (the sampler's epoch, batches handed out in it). On resume, the first iteration
    in that same epoch skips that many batches (fetched and dropped: cheap for in-memory arrays).
    Creating the iterator draws DataLoader's base seed from torch's global generator; when
    skipping, that draw and any the skipped batches made (augmentations) are undone, because the uninterrupted run drew it before the checkpoint.
    The iterator is created at its first batch, after Lightning's `set_epoch`, with or without
    worker processes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.position = 0
        self._resume_at: tuple[int, int] | None = None

    def _epoch(self) -> int:
        return int(getattr(self.sampler, "epoch", 0))

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self._epoch(), "batches": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._resume_at = (int(state["epoch"]), int(state["batches"]))

    def __iter__(self):  # a generator: nothing runs before the first batch is asked for
        resume_at, self._resume_at = self._resume_at, None
        skip = resume_at[1] if resume_at and resume_at[0] == self._epoch() else 0
        rng = _collect_rng_states(include_cuda=False)
        iterator = super().__iter__()
        for self.position in range(1, skip + 1):
            next(iterator)
        if skip:
            _set_rng_states(rng)
        self.position = skip
        for batch in iterator:
            self.position += 1
            yield batch


def train_loader(dataset: Dataset, batch_size: int, **kwargs: Any) -> ResumableLoader:
    """The train split's loader: shuffled by `EpochShuffle` with the run's seed (seed_everything
    sets torch's initial seed), resumable mid-epoch."""
    sampler = EpochShuffle(len(dataset), torch.initial_seed())
    return ResumableLoader(dataset, batch_size=batch_size, sampler=sampler, **kwargs)


def keep_batch(batch: Any) -> Any:
    """Collate for `__getitems__`: the dataset already returned the batch."""
    return batch


def _to_tensors(arrays: Arrays) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in arrays.items():
        value = np.asarray(value)
        if np.issubdtype(value.dtype, np.floating):
            out[key] = torch.as_tensor(value, dtype=torch.float32)
        else:
            out[key] = torch.as_tensor(value, dtype=torch.long)
    return out


class ArrayDataModule(L.LightningDataModule):
    """Base for in-memory datasets.

    Args:
        batch_size: Examples per batch for every split.
        val_fraction: Share of the pool held out for validation (pools only).
        test_fraction: Share of the pool held out for test (pools only).
        split_seed: Seed of the split permutation, independent of the run seed, so that runs with
            different seeds see the same split.
        standardize: Scale 2-D features to zero mean and unit variance with train statistics.
        standardize_target: Scale float (regression) targets, each column, to zero mean and unit
            variance with train statistics (kept as `target_mean`, `target_std`); losses and
            metrics are then in units of the target's train standard deviation.
        num_workers: DataLoader worker processes (0 keeps everything in the run's process).
    """

    def __init__(
        self,
        batch_size: PositiveInt = 64,
        val_fraction: ProperFraction = 0.15,
        test_fraction: ProperFraction = 0.15,
        split_seed: int = 0,
        standardize: bool = True,
        num_workers: NonNegativeInt = 0,
        standardize_target: bool = False,
    ) -> None:
        super().__init__()
        if val_fraction + test_fraction >= 1.0:
            raise ValueError(
                f"val_fraction + test_fraction must be < 1, got {val_fraction} + {test_fraction}"
            )
        self.batch_size = batch_size
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.split_seed, self.standardize, self.num_workers = split_seed, standardize, num_workers
        self.standardize_target = standardize_target
        self.target_mean: np.ndarray | None = None
        self.target_std: np.ndarray | None = None
        self._splits: dict[str, dict[str, torch.Tensor]] | None = None

    def load(self) -> Arrays | dict[str, Arrays]:
        """Return one pool {"x", "y", ...} or splits {"train": {...}, "test": {...}[, "val"]}."""
        raise NotImplementedError

    def _split(self, loaded: Arrays | dict[str, Arrays]) -> dict[str, Arrays]:
        if "x" in loaded:
            pool = loaded
            n = len(pool["x"])
            order = np.random.default_rng(self.split_seed).permutation(n)
            n_test, n_val = int(round(n * self.test_fraction)), int(round(n * self.val_fraction))
            parts = {
                "test": order[:n_test],
                "val": order[n_test : n_test + n_val],
                "train": order[n_test + n_val :],
            }
            return {split: {k: np.asarray(v)[idx] for k, v in pool.items()} for split, idx in parts.items()}
        splits = dict(loaded)
        if "train" not in splits or "test" not in splits:
            raise ValueError(f"load() must return a pool or train/test splits, got keys {sorted(splits)}")
        if "val" not in splits:
            train = splits["train"]
            n = len(train["x"])
            order = np.random.default_rng(self.split_seed).permutation(n)
            n_val = int(round(n * self.val_fraction))
            splits["val"] = {k: np.asarray(v)[order[:n_val]] for k, v in train.items()}
            splits["train"] = {k: np.asarray(v)[order[n_val:]] for k, v in train.items()}
        return splits

    def setup(self, stage: str | None = None) -> None:
        if self._splits is not None:
            return
        splits = self._split(self.load())
        if self.standardize and np.asarray(splits["train"]["x"]).ndim == 2:
            x = np.asarray(splits["train"]["x"], dtype=np.float64)
            mean, std = x.mean(0), x.std(0)
            std[std == 0] = 1.0
            for part in splits.values():
                part["x"] = (np.asarray(part["x"], dtype=np.float64) - mean) / std
        if self.standardize_target:
            self._standardize_target(splits)
        self._splits = {split: _to_tensors(arrays) for split, arrays in splits.items()}

    def _standardize_target(self, splits: dict[str, Arrays]) -> None:
        y = np.asarray(splits["train"]["y"])
        if not np.issubdtype(y.dtype, np.floating):
            raise ValueError("standardize_target applies to float (regression) targets; these targets are "
                             f"{y.dtype} class labels")
        self.target_mean, self.target_std = y.mean(0), y.std(0)
        self.target_std = np.where(self.target_std == 0, 1.0, self.target_std)
        for part in splits.values():
            part["y"] = ((np.asarray(part["y"]) - self.target_mean) / self.target_std).astype(y.dtype)

    def split(self, split: str) -> dict[str, torch.Tensor]:
        """The tensors of one split ("train", "val", "test"), loading on first use."""
        self.setup()
        assert self._splits is not None
        return self._splits[split]

    def info(self) -> dict[str, int]:
        """Sizes the builder checks against the spec: in_features or in_channels, and
        num_classes (integer targets) or num_targets (float targets)."""
        train = self.split("train")
        x, y = train["x"], train["y"]
        info: dict[str, int] = {}
        if x.ndim == 2:
            info["in_features"] = int(x.shape[1])
        elif x.ndim == 4:
            info["in_channels"] = int(x.shape[1])
        if y.dtype == torch.long:
            all_y = torch.cat([self.split(s)["y"] for s in SPLITS])
            info["num_classes"] = int(all_y.max()) + 1
        else:
            info["num_targets"] = 1 if y.ndim == 1 else int(y.shape[1])
        return info

    def _loader(self, split: str) -> DataLoader:
        dataset = TensorDictDataset(self.split(split))
        kwargs = dict(num_workers=self.num_workers, collate_fn=keep_batch, persistent_workers=self.num_workers > 0)
        if split == "train":
            return train_loader(dataset, self.batch_size, **kwargs)
        return DataLoader(dataset, batch_size=self.batch_size, **kwargs)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")
