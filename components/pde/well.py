"""A 2-D dataset of The Well (Ohana et al. 2024; polymathic-ai.org/the_well) from a local copy: the
paper-scale data of lgs_pde.

Layout read (The Well's own, as `the-well-download` writes it):
``<path>/datasets/<dataset>/data/{train,valid,test}/*.hdf5``; each file holds ``t0_fields/<name>``
scalar fields (n_traj, n_steps, H, W) and ``t1_fields/<name>`` vector fields (n_traj, n_steps, H, W,
2), one channel per scalar and per vector component. Only fields that vary over time and samples
are read (a field's `time_varying` / `sample_varying` attributes). Every field is resized to
size x size (bilinear) for the square conv VAE and standardised per channel with train statistics.
Examples match `pde_trajectories` (components/pde/data.py): snapshots {"x": (B, C, size, size)} or
windows {"x": (B, window, C, size, size)}, test trajectories {"x": (B, num_frames, C, size, size)}.

Nothing is downloaded: without the folder, construction fails at once naming it (and
`the-well-download --base-path PATH --dataset NAME`); without h5py it fails naming the `pde` extra.
Everything is held in memory; `max_trajectories` caps each split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from components.data.base import ArrayDataModule, Arrays, local_path
from components.types import PositiveInt
from framework.extras import missing

SPLITS = {"train": "train", "val": "valid", "test": "test"}


def import_h5py():  # noqa: ANN201 (the module)
    """h5py, or an ImportError naming the extra that brings it."""
    try:
        import h5py
    except ImportError as error:
        raise ImportError(missing("h5py", "the_well data")) from error
    return h5py


def split_files(root: Path, dataset: str) -> dict[str, list[Path]]:
    """The .hdf5 files of each split under root/datasets/<dataset>/data/, or a FileNotFoundError
    naming the first folder that is missing or empty."""
    files = {}
    for split, folder in SPLITS.items():
        where = root / "datasets" / dataset / "data" / folder
        found = sorted(where.glob("*.hdf5")) + sorted(where.glob("*.h5"))
        if not found:
            raise FileNotFoundError(f"the_well: no .hdf5 files in {where}. Get them with `the-well-download "
                                    f"--base-path {root} --dataset {dataset}` (pip install the_well). Nothing is downloaded.")
        files[split] = found
    return files


def read_fields(path: Path, fields: list[str] | None, max_trajectories: int) -> np.ndarray:
    """(n_traj, n_steps, C, H, W) float32 channels of one file (module docstring)."""
    h5py = import_h5py()
    channels = []
    with h5py.File(path, "r") as f:
        for group in ("t0_fields", "t1_fields"):
            for name, data in f.get(group, {}).items():
                varying = data.attrs.get("time_varying", True) and data.attrs.get("sample_varying", True)
                if not varying or (fields is not None and name not in fields):
                    continue
                array = np.asarray(data[:max_trajectories], dtype=np.float32)
                channels += [array] if group == "t0_fields" else [array[..., i] for i in range(array.shape[-1])]
    if not channels:
        raise ValueError(f"{path}: none of the fields {fields} is a time- and sample-varying t0/t1 field")
    return np.stack(channels, axis=2)


def resize(u: np.ndarray, size: int) -> np.ndarray:
    """(..., H, W) -> (..., size, size), bilinear."""
    import torch
    import torch.nn.functional as F

    lead = u.shape[:-2]
    flat = torch.as_tensor(u).reshape(-1, 1, *u.shape[-2:])
    return F.interpolate(flat, size=(size, size), mode="bilinear", align_corners=False).reshape(*lead, size, size).numpy()


class TheWell(ArrayDataModule):
    """One 2-D dataset of The Well from a local folder (module docstring).

    Args:
        dataset: The Well's dataset name, e.g. turbulent_radiative_layer_2D, rayleigh_benard,
            active_matter.
        path: The base folder (holding datasets/<dataset>/); None reads the variable `env`.
        env: Environment variable holding the base folder when `path` is None.
        fields: Field names to read (t0 or t1); None reads every varying field.
        size: Side of the square fields after resizing.
        sample: "snapshots" or "windows" (test: whole trajectories of num_frames).
        window: Frames per training window.
        num_frames: Frames of each test trajectory kept (from its start).
        max_trajectories: Trajectories read per file.
        batch_size: Examples per batch.
    """

    def __init__(self, dataset: str, path: str | None = None, env: str = "EXPSPEC_THE_WELL_DIR",
                 fields: list[str] | None = None, size: PositiveInt = 128,
                 sample: Literal["snapshots", "windows"] = "snapshots", window: PositiveInt = 3,
                 num_frames: PositiveInt = 24, max_trajectories: PositiveInt = 64, batch_size: PositiveInt = 16) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        root = Path(local_path("the_well", "data.path", path, env, "The Well's base folder", folder=True))
        self.files = split_files(root, dataset)
        import_h5py()
        self.fields, self.size, self.sample, self.window = fields, size, sample, window
        self.num_frames, self.max_trajectories = num_frames, max_trajectories
        self.families = (dataset,)

    def load(self) -> dict[str, Arrays]:
        u = {split: resize(np.concatenate([read_fields(p, self.fields, self.max_trajectories) for p in paths]), self.size)
             for split, paths in self.files.items()}
        axes = (0, 1, 3, 4)
        mean, std = u["train"].mean(axes, keepdims=True)[0], u["train"].std(axes, keepdims=True)[0]
        std[std == 0] = 1.0
        out = {}
        for split, fields in u.items():
            fields = (fields - mean) / std
            if self.sample == "snapshots":
                out[split] = {"x": fields.reshape(-1, *fields.shape[2:])}
            elif split == "test":
                out[split] = {"x": fields[:, :self.num_frames]}
            else:
                starts = range(fields.shape[1] - self.window + 1)
                out[split] = {"x": np.concatenate([fields[:, s:s + self.window] for s in starts])}
        return out

    def info(self) -> dict[str, int]:
        """The channels of the fields read (opens the first train file)."""
        return {"in_channels": int(read_fields(self.files["train"][0], self.fields, 1).shape[2])}
