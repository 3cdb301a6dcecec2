"""components/elm/shd.py: SHD spike binning, digit-sum pairs, and the missing-files message."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from components.elm.shd import SHDAdding, bin_spikes, sum_pairs


def test_bin_spikes_by_hand() -> None:
    # 4 bins of 0.25 s over 1 s, 700 units pooled into 7 channels of 100 units.
    times = np.array([0.0, 0.30, 0.30, 0.99, 1.2])
    units = np.array([0, 150, 199, 699, 5])
    out = bin_spikes(times, units, steps=4, duration=1.0, channels=7)
    expected = np.zeros((4, 7), dtype=np.float32)
    expected[0, 0] = expected[1, 1] = expected[3, 6] = 1.0   # two spikes in one bin count once; 1.2 s dropped
    np.testing.assert_array_equal(out, expected)


def test_pairs_follow_each_other_and_sum_digits_across_languages() -> None:
    samples = np.arange(4)[:, None, None] * np.ones((4, 2, 3), dtype=np.float32)   # sample i is all i
    labels = np.array([3, 17, 9, 10])                                             # 17: German 7, 10: German 0
    out = sum_pairs(np.random.default_rng(0), samples, labels, 50)
    assert out["x"].shape == (50, 4, 3)
    first, second = out["x"][:, 0, 0].astype(int), out["x"][:, 2, 0].astype(int)
    np.testing.assert_array_equal(out["y"], labels[first] % 10 + labels[second] % 10)
    assert out["y"].max() <= 18


def test_missing_files_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shd_train.h5").write_bytes(b"")
    message = (f"shd_adding: SHD files not found (data.root = {tmp_path}; missing shd_test.h5). Put the Spiking "
               "Heidelberg Digits files")
    with pytest.raises(FileNotFoundError, match=re.escape(message)):
        SHDAdding(root=str(tmp_path))
    monkeypatch.setenv("EXPSPEC_SHD", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match=re.escape(f"($EXPSPEC_SHD = {tmp_path / 'absent'}; missing "
                                                          "shd_train.h5, shd_test.h5)")):
        SHDAdding()


def test_info_needs_no_files(tmp_path: Path) -> None:
    for name in ("shd_train.h5", "shd_test.h5"):
        (tmp_path / name).write_bytes(b"")
    data = SHDAdding(root=str(tmp_path), steps=50, channels=70)
    assert data.info() == {"in_features": 70, "num_classes": 19, "seq_len": 100}
    with pytest.raises(ValueError, match="channels must be <= 700"):
        SHDAdding(root=str(tmp_path), channels=701)
