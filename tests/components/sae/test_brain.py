"""brain_sae's pieces (components/sae/brain.py, brain_data.py): the synthetic subjects with planted
atoms, the scores (voxelwise r, atom recovery, the RidgeCV readout), the coupled and two-stage
training loss, and the paper-scale data module's early failure without its folder. Fast: tiny sizes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from components.sae.brain import CoupledEncoding, RidgeEncoding, atom_recovery, encoding_scores, voxel_correlation
from components.sae.brain_data import StoryFMRI, SyntheticSemanticBrain
from components.sae.models import TopKSAE

SMALL = dict(n_features=16, n_brain_atoms=6, n_nuisance_atoms=3, active_atoms=2, n_subjects=2, n_voxels=5,
             n_train=200, n_val=50, n_test=60)


def test_synthetic_subjects_have_the_shapes_and_follow_the_seed() -> None:
    data = SyntheticSemanticBrain(**SMALL, seed=3)
    train = data.split("train")
    assert train["x"].shape == (200, 16) and train["y"].shape == (200, 2, 5) and train["y_new"].shape == (200, 5)
    assert data.split("test")["x"].shape == (60, 16) and data.planted_atoms.shape == (6, 16)
    np.testing.assert_allclose(np.linalg.norm(data.planted_atoms, axis=1), 1.0)
    again = SyntheticSemanticBrain(**SMALL, seed=3).split("train")
    assert torch.equal(train["x"], again["x"]) and torch.equal(train["y"], again["y"])
    assert not torch.equal(train["x"], SyntheticSemanticBrain(**SMALL, seed=4).split("train")["x"])


def test_features_are_sparse_combinations_of_the_planted_atoms() -> None:
    """Noise-free features lie in the span of the planted atoms; responses depend on brain atoms only."""
    data = SyntheticSemanticBrain(**SMALL, feature_noise=0.0, snr=1e6, seed=0)
    x = data.split("train")["x"].double().numpy()
    atoms = np.concatenate([data.planted_atoms, data.nuisance_atoms])
    codes, *_ = np.linalg.lstsq(atoms.T, x.T, rcond=None)
    np.testing.assert_allclose(atoms.T @ codes, x.T, atol=1e-4)
    assert ((np.abs(codes) > 1e-3).sum(0) <= 2).all()


def test_scores() -> None:
    rng = np.random.default_rng(0)
    y = rng.standard_normal((100, 4))
    assert voxel_correlation(y, y) == pytest.approx(1.0)
    assert voxel_correlation(np.zeros_like(y), y) == 0.0  # the mean predictor
    atoms = rng.standard_normal((5, 8))
    assert atom_recovery(atoms, atoms) == pytest.approx(1.0)
    assert atom_recovery(np.concatenate([atoms, -atoms]), atoms[:2]) == pytest.approx(1.0)
    assert atom_recovery(rng.standard_normal((5, 8)), atoms) < 0.9


def test_ridge_readout_from_the_true_codes_predicts_well() -> None:
    data = SyntheticSemanticBrain(**SMALL, snr=4.0, seed=1)
    features = {s: data.split(s)["x"].double().numpy() for s in ("train", "val", "test")}
    scores = encoding_scores(features, data, [0.1, 1.0, 10.0], transfer_samples=50)
    assert set(scores) == {"val/r", "test/r", "test/transfer_r"}
    assert scores["test/r"] > 0.5
    with pytest.raises(ValueError, match="transfer_samples"):
        encoding_scores(features, data, [1.0], transfer_samples=500)


class _Trainer:
    def __init__(self, datamodule):
        self.datamodule = datamodule


def _task(coupling: float) -> tuple[CoupledEncoding, SyntheticSemanticBrain]:
    data = SyntheticSemanticBrain(**SMALL, seed=0)
    task = CoupledEncoding(TopKSAE(16, 8, 2), optimizer=lambda p: torch.optim.Adam(p, lr=1e-2), coupling=coupling)
    task._trainer = _Trainer(data)  # what Lightning's trainer gives the hooks
    task.setup("fit")
    return task, data


def test_coupled_loss_trains_the_heads_and_two_stage_does_not() -> None:
    for coupling in (1.0, 0.0):
        task, data = _task(coupling)
        assert task.heads_weight.shape == (2, 8, 5) and task.heads(torch.zeros(3, 8)).shape == (3, 2, 5)
        task.log = lambda *a, **k: None
        batch = {k: v[:32] for k, v in data.split("train").items()}
        loss = task.training_step(batch, 0)
        loss.backward()
        assert task.sae.W_dec.grad is not None
        assert (task.heads_weight.grad is not None) == (coupling > 0)


def test_coupled_test_logs_every_score() -> None:
    task, _ = _task(1.0)
    logged = {}
    task.log = lambda name, value, **k: logged.__setitem__(name, value)
    task.on_test_epoch_end()
    assert {"val/r", "test/r", "test/transfer_r", "test/fvu", "test/l0", "test/r_heads", "test/atom_recovery",
            "test/nuisance_recovery"} <= set(logged)
    ridge = RidgeEncoding(alphas=[1.0], transfer_samples=50)
    ridge._trainer = task._trainer
    ridge.log = lambda name, value, **k: logged.__setitem__(f"ridge:{name}", value)
    ridge.on_test_epoch_end()
    assert {"ridge:val/r", "ridge:test/r", "ridge:test/transfer_r"} <= set(logged)


def test_story_fmri_fails_early_without_its_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("BRAIN_SAE_FMRI_ROOT", raising=False)
    with pytest.raises(FileNotFoundError, match="BRAIN_SAE_FMRI_ROOT.*Nothing is downloaded"):
        StoryFMRI()
    with pytest.raises(FileNotFoundError, match="missing stories.json"):
        StoryFMRI(root=str(tmp_path))


def test_story_fmri_masks_bold_runs_with_nilearn(tmp_path) -> None:
    nibabel = pytest.importorskip("nibabel")
    pytest.importorskip("nilearn")
    rng = np.random.default_rng(0)
    affine = np.eye(4)
    nibabel.save(nibabel.Nifti1Image(np.ones((3, 3, 2), dtype=np.uint8), affine), tmp_path / "mask.nii.gz")
    (tmp_path / "features").mkdir()
    runs = {"train": ["a", "b"], "test": ["c"]}
    for run in ["a", "b", "c"]:
        np.save(tmp_path / "features" / f"{run}.npy", rng.standard_normal((40, 4)))
        for subject in ["s1", "s2", "s3"]:
            (tmp_path / subject).mkdir(exist_ok=True)
            bold = rng.standard_normal((3, 3, 2, 40)).astype(np.float32)
            nibabel.save(nibabel.Nifti1Image(bold, affine), tmp_path / subject / f"{run}.nii.gz")
    (tmp_path / "stories.json").write_text(json.dumps({**runs, "subjects": ["s1", "s2"], "held_out_subject": "s3"}))
    data = StoryFMRI(root=str(tmp_path), trim=5)
    train = data.split("train")
    assert train["y"].shape[1:] == (2, 18) and train["y_new"].shape[1] == 18 and train["x"].shape[1] == 4
    assert len(train["x"]) + len(data.split("val")["x"]) == 2 * 30 and len(data.split("test")["x"]) == 30
