"""Trajectories of a family of 1-D periodic PDEs (components/pde/solvers.py) as training data.

`num_trajectories` trajectories of `num_frames` fields on a grid of `grid` points, the same number
from each family (family i gets the trajectories i, i + F, ...), drawn from `seed`. Trajectories, not
frames, are split into train / val / test (`val_fraction`, `test_fraction`, by `split_seed`), so no
test trajectory is seen in training. Batches, by `sample`:

- ``snapshots``: every frame is one example, {"x": (B, 1, grid)} (autoencoder pretraining);
- ``windows``: train and val examples are the `window` consecutive frames starting at every frame,
  {"x": (B, window, 1, grid)} (next-step training); test examples are whole trajectories,
  {"x": (B, num_frames, 1, grid), "family": (B,) index into `families`} (rollout evaluation).

Fields are divided by one scale, the train fields' standard deviation (kept as `scale`).
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np

from components.data.base import ArrayDataModule, Arrays
from components.pde.solvers import FAMILIES, trajectories
from components.types import PositiveInt, ProperFraction

FamilyName = Literal["heat", "advection", "burgers", "kuramoto_sivashinsky"]


@functools.lru_cache(maxsize=4)
def family_trajectories(families: tuple[str, ...], count: int, frames: int, grid: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(count, frames, grid) float32 trajectories and their (count,) family indices, family i at rows
    i, i + F, ... (cached per process: the VAE and the dynamics runs of one seed share them)."""
    rng = np.random.default_rng(seed)
    family = np.arange(count) % len(families)
    out = np.empty((count, frames, grid), dtype=np.float32)
    for i, name in enumerate(families):
        rows = np.flatnonzero(family == i)
        out[rows] = trajectories(name, rng, len(rows), frames, grid)
    return out, family


class PDETrajectories(ArrayDataModule):
    """Trajectories of 1-D periodic PDE families (module docstring).

    Args:
        families: PDE families, each of heat, advection, burgers, kuramoto_sivashinsky.
        num_trajectories: Trajectories in all, spread evenly over the families.
        num_frames: Fields per trajectory.
        grid: Grid points of a field.
        sample: "snapshots" (frames) or "windows" (consecutive frames; whole trajectories for test).
        window: Frames per training window (context + 1 for next-step training).
        seed: Seed of the initial conditions.
        batch_size: Examples per batch.
        val_fraction: Share of the trajectories held out for validation.
        test_fraction: Share of the trajectories held out for test.
        split_seed: Seed of the split of trajectories.
    """

    def __init__(
        self,
        families: tuple[FamilyName, ...] = FAMILIES,
        num_trajectories: PositiveInt = 200,
        num_frames: PositiveInt = 40,
        grid: PositiveInt = 64,
        sample: Literal["snapshots", "windows"] = "snapshots",
        window: PositiveInt = 3,
        seed: int = 0,
        batch_size: PositiveInt = 64,
        val_fraction: ProperFraction = 0.1,
        test_fraction: ProperFraction = 0.2,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        unknown = [name for name in families if name not in FAMILIES]
        if unknown or not families:
            raise ValueError(f"families must be a non-empty list of {', '.join(FAMILIES)}; got {list(families)}")
        if sample not in ("snapshots", "windows"):
            raise ValueError(f"sample must be 'snapshots' or 'windows', got '{sample}'")
        if sample == "windows" and not 2 <= window <= num_frames:
            raise ValueError(f"window must be in [2, num_frames = {num_frames}], got {window}")
        if num_trajectories < 3 * len(families):
            raise ValueError(f"num_trajectories must be >= 3 per family ({3 * len(families)}), got {num_trajectories}")
        self.families, self.num_trajectories, self.num_frames = tuple(families), num_trajectories, num_frames
        self.grid, self.sample, self.window, self.seed = grid, sample, window, seed
        self.scale = 1.0

    def load(self) -> dict[str, Arrays]:
        u, family = family_trajectories(self.families, self.num_trajectories, self.num_frames, self.grid, self.seed)
        order = np.random.default_rng(self.split_seed).permutation(len(u))
        n_test = max(1, int(round(len(u) * self.test_fraction)))
        n_val = max(1, int(round(len(u) * self.val_fraction)))
        parts = {"test": order[:n_test], "val": order[n_test:n_test + n_val], "train": order[n_test + n_val:]}
        self.scale = float(u[parts["train"]].std())
        return {split: self.examples(u[rows] / self.scale, family[rows], split) for split, rows in parts.items()}

    def examples(self, u: np.ndarray, family: np.ndarray, split: str) -> Arrays:
        """The examples of one split's trajectories (N, T, grid), per `sample` (module docstring)."""
        if self.sample == "snapshots":
            return {"x": u.reshape(-1, 1, self.grid), "family": np.repeat(family, u.shape[1])}
        if split == "test":
            return {"x": u[:, :, None, :], "family": family}
        starts = range(u.shape[1] - self.window + 1)
        x = np.concatenate([u[:, s:s + self.window] for s in starts])[:, :, None, :]
        return {"x": x, "family": np.tile(family, len(starts))}

    def info(self) -> dict[str, int]:
        """The channels a model of these fields takes (1)."""
        return {"in_channels": 1}
