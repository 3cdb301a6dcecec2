"""SHD-Adding (paper scale): pairs of Spiking Heidelberg Digits, target the sum of their digits.

SHD (Cramer et al. 2020) holds spoken digits 0-9 in English and German (labels 0-19) as spike
trains of 700 cochlea channels, in `shd_train.h5` and `shd_test.h5` (groups `spikes/times` in
seconds, `spikes/units`, and `labels`). Nothing is downloaded here: the files must be in a local
folder (`root`, else the environment variable `env`); a missing folder or file stops the run when
the data module is built, naming what is missing.

Each sample is binned into `steps` bins over `duration` seconds and `channels` channels (700 / channels
adjacent units summed per channel, counts clipped to 1). A pair is two samples drawn at random
(seeded) and put one after the other (2 steps bins); its target is (label_a mod 10) + (label_b mod 10)
(19 classes). Train and val pairs come from shd_train.h5 (a held-out share of its samples for
val), test pairs from shd_test.h5.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from components.data.base import Arrays, ArrayDataModule
from components.local_assets import local_path
from components.types import OpenFraction, PositiveFloat, PositiveInt
from framework.extras import missing

FILES = {"train": "shd_train.h5", "test": "shd_test.h5"}
SHD_UNITS = 700


def bin_spikes(times: np.ndarray, units: np.ndarray, steps: int, duration: float, channels: int) -> np.ndarray:
    """(steps, channels) float32 in {0, 1}: 1 where some spike of units pooled into that channel
    (unit * channels // 700) falls in that time bin; spikes at or after `duration` are dropped."""
    keep = times < duration
    t = (times[keep] / duration * steps).astype(np.int64)
    c = units[keep].astype(np.int64) * channels // SHD_UNITS
    out = np.zeros((steps, channels), dtype=np.float32)
    out[t, c] = 1.0
    return out


def sum_pairs(rng: np.random.Generator, samples: np.ndarray, labels: np.ndarray, count: int) -> Arrays:
    """`count` random pairs of samples (N, T, C) one after the other in time: {"x": (count, 2T, C),
    "y": (count,) digit sums}."""
    first, second = rng.integers(0, len(samples), size=(2, count))
    x = np.concatenate([samples[first], samples[second]], axis=1)
    y = (labels[first] % 10 + labels[second] % 10).astype(np.int64)
    return {"x": x, "y": y}


class SHDAdding(ArrayDataModule):
    """SHD-Adding from the local SHD files (module docstring).

    Args:
        root: Folder holding shd_train.h5 and shd_test.h5; None reads the variable `env`.
        env: Environment variable naming the folder when `root` is None.
        steps: Time bins per digit (a pair has 2 steps).
        duration: Seconds of each digit that are binned.
        channels: Input channels after pooling the 700 units.
        num_train: Training pairs.
        num_val: Validation pairs.
        num_test: Test pairs.
        val_fraction: Share of shd_train.h5's samples kept for validation pairs.
        batch_size: Pairs per batch.
        seed: Seed of the pairing and of the train/val split of the samples.
    """

    def __init__(
        self,
        root: str | None = None,
        env: str = "EXPSPEC_SHD",
        steps: PositiveInt = 100,
        duration: PositiveFloat = 1.0,
        channels: PositiveInt = 140,
        num_train: PositiveInt = 50000,
        num_val: PositiveInt = 2000,
        num_test: PositiveInt = 10000,
        val_fraction: OpenFraction = 0.1,
        batch_size: PositiveInt = 128,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        folder = local_path("shd_adding", "data.root", root, env, "SHD files", needs=tuple(FILES.values()),
                            how="Put the Spiking Heidelberg Digits files shd_train.h5 and shd_test.h5 "
                                "(zenke.github.io/spiking-heidelberg-digits, or `tonic.datasets.SHD`) in a folder")
        if channels > SHD_UNITS:
            raise ValueError(f"channels must be <= {SHD_UNITS} (SHD's units), got {channels}")
        self.folder, self.steps, self.duration, self.channels = Path(folder), steps, duration, channels
        self.val_share, self.seed = val_fraction, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}

    def read(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Binned samples (N, steps, channels) and labels (N,) of one SHD file."""
        try:
            import h5py
        except ImportError as error:
            raise ImportError(missing("h5py", "shd_adding (SHD's HDF5 files)")) from error
        with h5py.File(self.folder / FILES[split], "r") as file:
            times, units, labels = file["spikes/times"], file["spikes/units"], np.asarray(file["labels"])
            samples = np.stack([bin_spikes(np.asarray(t), np.asarray(u), self.steps, self.duration, self.channels)
                                for t, u in zip(times, units)])
        return samples, labels.astype(np.int64)

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        samples, labels = self.read("train")
        order = rng.permutation(len(samples))
        n_val = int(len(samples) * self.val_share)
        val, train = order[:n_val], order[n_val:]
        test_samples, test_labels = self.read("test")
        return {"train": sum_pairs(rng, samples[train], labels[train], self.sizes["train"]),
                "val": sum_pairs(rng, samples[val], labels[val], self.sizes["val"]),
                "test": sum_pairs(rng, test_samples, test_labels, self.sizes["test"])}

    def info(self) -> dict[str, int]:
        """in_features, num_classes (19 digit sums) and seq_len (2 steps), without reading the files."""
        return {"in_features": self.channels, "num_classes": 19, "seq_len": 2 * self.steps}
