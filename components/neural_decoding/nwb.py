"""`nwb_reaches` (paper scale, beemo): paired and unpaired reach trials read from intracortical
motor NWB files in a local folder, never downloaded.

The folder (`root`, or $BEEMO_NWB_ROOT) holds NWB files (e.g. DANDI 000128 MC_Maze, 000129
MC_RTT, 000127 Area2_Bump or the Perich/Miller center-out sessions, prepared as one file per
session). Each file of `paired_files` is a session: its units' spike times (the Units table) are
binned at `bin_ms`, its behaviour is the TimeSeries `velocity` ("<processing module>/<interface>",
e.g. "behavior/hand_vel") resampled to the bins, and each row of its trials table gives one trial
of `steps` bins starting `offset_ms` after the column `align` (e.g. move_onset_time). The first
paired file's trials are split into train / val / test (`val_fraction`, `test_fraction`, in file
order); the other paired files add all their trials to the paired pool. The files of
`unpaired_files` contribute their behaviour only (spikes are not read): the unpaired pool. NWB
files are read with pynwb (the `neural` extra), imported when the data is set up; the folder and
files are checked in the constructor, so a run without them stops before any training.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from components.local_assets import local_path
from components.neural_decoding.pools import PairedUnpairedPools
from components.types import NonNegativeInt, OpenFraction, PositiveFloat, PositiveInt, Probability
from framework.extras import require

HOW = ("Prepare one NWB file per session (e.g. NLB MC_Maze, DANDI 000128/000138/000140) in a folder, on a machine "
       "with network")


def binned_trials(path: Path, velocity: str, align: str, steps: int, bin_ms: float, offset_ms: float,
                  spikes: bool) -> dict[str, np.ndarray]:
    """One NWB file's trials: behaviour (n, steps, c) and, with `spikes`, counts (n, steps, units)."""
    pynwb = require("pynwb", "nwb_reaches")
    with pynwb.NWBHDF5IO(str(path), "r") as io:
        nwb = io.read()
        module, name = velocity.split("/", 1)
        series = nwb.processing[module].data_interfaces[name]
        values = np.asarray(series.data[:], dtype=np.float64)
        times = series.timestamps[:] if series.timestamps is not None else (
            series.starting_time + np.arange(len(values)) / series.rate)
        starts = np.asarray(nwb.trials[align][:], dtype=np.float64) + offset_ms / 1000
        starts = starts[np.isfinite(starts)]
        edges = starts[:, None] + np.arange(steps + 1)[None] * bin_ms / 1000
        centers = (edges[:, :-1] + edges[:, 1:]) / 2
        behavior = np.stack([np.interp(centers, times, values[:, j]) for j in range(values.shape[1])], -1)
        out = {"behavior": behavior}
        if spikes:
            trains = [np.asarray(nwb.units["spike_times"][u]) for u in range(len(nwb.units))]
            out["spikes"] = np.stack([np.stack([np.histogram(train, bins=row)[0] for train in trains], -1)
                                      for row in edges]).astype(np.float32)
    return out


class NWBReaches(PairedUnpairedPools):
    """Paired and unpaired reach trials from local NWB files (module docstring).

    Args:
        paired_files: NWB files (names in the folder) with neural activity: the sessions.
        unpaired_files: NWB files whose behaviour alone is used.
        root: The folder (else $BEEMO_NWB_ROOT).
        velocity: The behaviour TimeSeries, "<processing module>/<interface>".
        align: The trials-table column a trial starts from.
        offset_ms: Shift of the trial start from `align`.
        steps: Bins per trial.
        bin_ms: Bin width.
        val_fraction: Share of the first session's trials held out for validation.
        test_fraction: Share held out for test.
        max_units: Units per session the decoder embeds (>= every session's units).
        paired_fraction, pretrain_steps, iterations, batch_size, seed: the mixture (pools.py).
    """

    def __init__(self, paired_files: list[str], unpaired_files: list[str] = [], root: str | None = None,
                 velocity: str = "behavior/hand_vel", align: str = "move_onset_time", offset_ms: float = -250.0,
                 steps: PositiveInt = 50, bin_ms: PositiveFloat = 20.0, val_fraction: OpenFraction = 0.1,
                 test_fraction: OpenFraction = 0.2, max_units: PositiveInt = 256,
                 paired_fraction: Probability = 1.0, pretrain_steps: NonNegativeInt = 0,
                 iterations: PositiveInt = 20000, batch_size: PositiveInt = 64, seed: NonNegativeInt = 0) -> None:
        super().__init__(paired_fraction, pretrain_steps, iterations, batch_size, seed)
        if not paired_files:
            raise ValueError("nwb_reaches needs at least one paired file (the evaluated session)")
        folder = Path(local_path("nwb_reaches", "data.root", root, "BEEMO_NWB_ROOT",
                                 "the folder of intracortical motor NWB files", needs=(*paired_files, *unpaired_files),
                                 how=HOW))
        self.paired_paths = [folder / f for f in paired_files]
        self.unpaired_paths = [folder / f for f in unpaired_files]
        self.read = dict(velocity=velocity, align=align, steps=steps, bin_ms=bin_ms, offset_ms=offset_ms)
        self.val_fraction, self.test_fraction, self.max_units = val_fraction, test_fraction, max_units

    def info(self) -> dict[str, int]:
        return {"sessions": len(self.paired_paths), "max_units": self.max_units, "steps": self.read["steps"]}

    def _session(self, index: int) -> dict[str, torch.Tensor]:
        trials = binned_trials(self.paired_paths[index], spikes=True, **self.read)
        units = trials["spikes"].shape[-1]
        if units > self.max_units:
            raise ValueError(f"{self.paired_paths[index].name} has {units} units, more than max_units={self.max_units}")
        spikes = np.zeros((*trials["spikes"].shape[:2], self.max_units), dtype=np.float32)
        spikes[..., :units] = trials["spikes"]
        n = len(spikes)
        return {"behavior": torch.tensor(trials["behavior"], dtype=torch.float32), "spikes": torch.tensor(spikes),
                "session": torch.full((n,), index, dtype=torch.long)}

    def setup(self, stage: str | None = None) -> None:
        if self.pools:
            return
        sessions = [self._session(i) for i in range(len(self.paired_paths))]
        first, n = sessions[0], len(sessions[0]["behavior"])
        n_test, n_val = max(1, int(n * self.test_fraction)), max(1, int(n * self.val_fraction))
        cut = {"paired": slice(0, n - n_val - n_test), "val": slice(n - n_val - n_test, n - n_test),
               "test": slice(n - n_test, n)}
        for name, rows in cut.items():
            self.pools[name] = {k: v[rows] for k, v in first.items()}
        for other in sessions[1:]:
            self.pools["paired"] = {k: torch.cat([self.pools["paired"][k], other[k]]) for k in other}
        behavior = [binned_trials(p, spikes=False, **self.read)["behavior"] for p in self.unpaired_paths]
        channels = first["behavior"].shape[-1]
        self.pools["unpaired"] = {"behavior": torch.tensor(np.concatenate(behavior), dtype=torch.float32)
                                  if behavior else torch.zeros(0, self.read["steps"], channels)}
