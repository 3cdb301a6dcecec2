"""components/pde/data.py and well.py: examples per `sample`, splits by trajectory, and The Well's
early, located failures without its files."""

import sys

import numpy as np
import pytest
import torch

from components.pde.data import PDETrajectories

SMALL = dict(num_trajectories=24, num_frames=8, grid=32, batch_size=8)


def test_snapshots_and_windows_come_from_the_same_scaled_trajectories():
    snaps = PDETrajectories(sample="snapshots", **SMALL)
    wins = PDETrajectories(sample="windows", window=3, **SMALL)
    train = snaps.split("train")["x"]
    assert train.shape[1:] == (1, 32) and abs(train.std().item() - 1.0) < 1e-3  # divided by the train std
    test = wins.split("test")
    assert test["x"].shape[1:] == (8, 1, 32) and test["family"].dtype == torch.long
    # each window is 3 consecutive frames of one train trajectory: the snapshots hold the same fields
    window = wins.split("train")["x"][0]
    assert window.shape == (3, 1, 32)
    assert any(torch.equal(window[0], train[i]) for i in range(len(train)))
    assert len(wins.split("train")["x"]) == len(train) // 8 * (8 - 3 + 1)


def test_trajectories_are_split_not_frames_and_families_are_balanced():
    wins = PDETrajectories(sample="windows", **SMALL)
    test = wins.split("test")["x"][:, 0].flatten(1)
    train = PDETrajectories(sample="snapshots", **SMALL).split("train")["x"].flatten(1)
    assert torch.cdist(test, train).min() > 1e-6  # no test frame is a training frame
    wins.setup()
    counts = np.bincount(np.concatenate([wins.split(s)["family"].numpy() for s in ("train", "val", "test")]))
    assert len(set(counts.tolist())) <= 2  # windows differ only by the split's trajectory counts


@pytest.mark.parametrize("kwargs, message", [
    (dict(families=("heat", "wave")), "families must be a non-empty list of heat, advection, burgers, "
                                      "kuramoto_sivashinsky; got ['heat', 'wave']"),
    (dict(sample="frames"), "sample must be 'snapshots' or 'windows', got 'frames'"),
    (dict(sample="windows", window=9), "window must be in [2, num_frames = 8], got 9"),
    (dict(num_trajectories=8), "num_trajectories must be >= 3 per family (12), got 8"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError) as error:
        PDETrajectories(**{**SMALL, **kwargs})
    assert str(error.value) == message


def test_the_well_without_its_folder_fails_before_loading(tmp_path, monkeypatch):
    from components.pde.well import TheWell

    monkeypatch.delenv("EXPSPEC_THE_WELL_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"the_well: The Well's base folder not found \(\$EXPSPEC_THE_WELL_DIR = \(unset\)\)"):
        TheWell(dataset="turbulent_radiative_layer_2D")
    (tmp_path / "datasets/turbulent_radiative_layer_2D/data/train").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no .hdf5 files in .*/train. Get them with `the-well-download "
                                                f"--base-path {tmp_path} --dataset turbulent_radiative_layer_2D`"):
        TheWell(dataset="turbulent_radiative_layer_2D", path=str(tmp_path))


def test_the_well_names_the_extra_when_h5py_is_missing(tmp_path, monkeypatch):
    from components.pde.well import TheWell

    for split in ("train", "valid", "test"):
        folder = tmp_path / "datasets/rayleigh_benard/data" / split
        folder.mkdir(parents=True)
        (folder / "a.hdf5").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py now raises ImportError
    with pytest.raises(ImportError, match=r"the_well data needs `h5py`, which comes with the optional extra 'pde': pip install 'expspec\[pde\]'"):
        TheWell(dataset="rayleigh_benard", path=str(tmp_path))


def test_the_well_reads_varying_fields_as_channels(tmp_path):
    h5py = pytest.importorskip("h5py")
    from components.pde.well import TheWell

    rng = np.random.default_rng(0)
    for split in ("train", "valid", "test"):
        folder = tmp_path / "datasets/toy/data" / split
        folder.mkdir(parents=True)
        with h5py.File(folder / "f.hdf5", "w") as f:
            f.create_dataset("t0_fields/density", data=rng.normal(size=(2, 6, 8, 16)).astype(np.float32))
            f.create_dataset("t0_fields/mask", data=np.ones((8, 16), np.float32)).attrs["time_varying"] = False
            f.create_dataset("t1_fields/velocity", data=rng.normal(size=(2, 6, 8, 16, 2)).astype(np.float32))
    data = TheWell(dataset="toy", path=str(tmp_path), size=8, sample="windows", window=3, num_frames=5)
    assert data.info() == {"in_channels": 3}
    assert data.split("train")["x"].shape == (2 * 4, 3, 3, 8, 8)
    assert data.split("test")["x"].shape == (2, 5, 3, 8, 8)
