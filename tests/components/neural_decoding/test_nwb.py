"""`nwb_reaches` (paper scale): without its folder it stops in the constructor and says what is
missing; with a small NWB file written here by pynwb (the `neural` extra) it bins trials."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from components.neural_decoding.nwb import NWBReaches


def test_missing_folder_fails_early_and_clearly(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("BEEMO_NWB_ROOT", raising=False)
    with pytest.raises(FileNotFoundError, match="BEEMO_NWB_ROOT.*Nothing is downloaded"):
        NWBReaches(paired_files=["session.nwb"])
    with pytest.raises(FileNotFoundError, match="missing session.nwb"):
        NWBReaches(paired_files=["session.nwb"], root=str(tmp_path))


def _write(path, trials: int = 10) -> None:
    pynwb = pytest.importorskip("pynwb")
    nwb = pynwb.NWBFile("reaches", "s0", datetime(2020, 1, 1, tzinfo=timezone.utc))
    times = np.arange(0, trials * 2.0, 0.001)
    behavior = nwb.create_processing_module("behavior", "hand")
    behavior.add(pynwb.TimeSeries(name="hand_vel", data=np.stack([np.sin(times), np.cos(times)], 1),
                                  timestamps=times, unit="m/s"))
    nwb.add_trial_column("move_onset_time", "movement onset")
    for i in range(trials):
        nwb.add_trial(start_time=2.0 * i, stop_time=2.0 * i + 1.5, move_onset_time=2.0 * i + 0.5)
    rng = np.random.default_rng(0)
    for _ in range(3):
        nwb.add_unit(spike_times=np.sort(rng.uniform(0, trials * 2.0, 200)))
    with pynwb.NWBHDF5IO(str(path), "w") as io:
        io.write(nwb)


def test_reads_trials_from_an_nwb_file(tmp_path) -> None:
    _write(tmp_path / "s.nwb")
    data = NWBReaches(paired_files=["s.nwb"], unpaired_files=["s.nwb"], root=str(tmp_path), steps=10,
                      bin_ms=20.0, offset_ms=0.0, max_units=4, val_fraction=0.2, test_fraction=0.2)
    data.setup()
    assert data.split("paired")["behavior"].shape == (6, 10, 2)
    assert data.split("test")["spikes"].shape == (2, 10, 4) and data.split("test")["spikes"][..., 3].sum() == 0
    assert data.split("unpaired")["behavior"].shape == (10, 10, 2)
    onset = 0.5 + 0.01  # the first trial's first bin centre
    assert data.split("paired")["behavior"][0, 0, 0].item() == pytest.approx(np.sin(onset), abs=1e-3)
