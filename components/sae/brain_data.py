"""Brain-encoding data for the coupled SAE (`brain_sae`): stimulus features x per TR and every
subject's voxel responses y, plus one held-out subject for transfer.

Batches are {"x": (B, d) float32, "y": (B, S, V) float32, "y_new": (B, V) float32}: the features
of B TRs, the responses of the S training subjects (V voxels each) and those of the held-out
subject `y_new` (which the encoding models never see in training; `coupled_encoding` and
`ridge_encoding` fit its readout on the first TRs of the train split only).

- `synthetic_semantic_brain` (tiny scale): features are sparse nonnegative combinations of
  planted unit-norm atoms, `n_brain_atoms` that drive the brain and `n_nuisance_atoms` with
  `nuisance_scale` x the amplitude that do not (high-variance feature directions with no brain
  effect: without them a plain SAE on the features finds the brain atoms as well as a coupled
  one). Each subject's map from brain atoms to voxels is a shared map plus a subject part
  (`subject_deviation`); responses have signal-to-noise ratio `snr` per voxel. The planted brain
  atoms are `planted_atoms` (n_brain_atoms, d), the nuisance atoms `nuisance_atoms`, so atom
  recovery is measurable.
- `story_fmri` (paper scale): features of a story-listening fMRI set (one .npy of LM features per
  run, already delayed and downsampled to TRs) and each subject's BOLD NIfTI for that run, masked
  to voxels with nilearn's NiftiMasker (z-scored per run) from a local folder; never downloads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from components.data.base import Arrays, ArrayDataModule
from components.local_assets import local_path
from components.types import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, ProperFraction
from framework.extras import require


class SyntheticSemanticBrain(ArrayDataModule):
    """Synthetic subjects with planted semantic-cortical atoms (seeded; no files).

    Per TR, `active_atoms` of the n_brain_atoms + n_nuisance_atoms atoms are active, chosen
    uniformly, with amplitudes 0.5 + |N(0, 1)| (times `nuisance_scale` for nuisance atoms):
    codes c (N, A). Features x = c @ atoms + feature_noise * N(0, 1). Subject s's responses
    y_s = c_brain @ (M + subject_deviation * E_s), each voxel scaled to unit signal variance, plus
    N(0, 1 / snr) noise; M (n_brain_atoms, V) and E_s are Gaussian. Subject S + 1 (the held-out
    one) is drawn the same way.

    Args:
        n_features: Width d of the features.
        n_brain_atoms: Planted atoms with a brain effect.
        n_nuisance_atoms: Planted atoms with none.
        nuisance_scale: Amplitude of the nuisance atoms relative to the brain atoms.
        active_atoms: Active planted atoms per TR.
        n_subjects: Training subjects S.
        n_voxels: Voxels V per subject.
        subject_deviation: Size of each subject's own part of the atom-to-voxel map (shared part 1).
        snr: Signal-to-noise variance ratio of each voxel.
        feature_noise: Standard deviation of the isotropic noise added to the features.
        n_train: Train TRs.
        n_val: Validation TRs.
        n_test: Test TRs.
        seed: Seed of the atoms, maps, codes and noise.

    Plus the base data module's batch_size (standardize is off: the planted atoms live in the raw
    feature space).
    """

    def __init__(
        self,
        n_features: PositiveInt = 64,
        n_brain_atoms: PositiveInt = 40,
        n_nuisance_atoms: NonNegativeInt = 20,
        nuisance_scale: PositiveFloat = 3.0,
        active_atoms: PositiveInt = 4,
        n_subjects: PositiveInt = 3,
        n_voxels: PositiveInt = 150,
        subject_deviation: NonNegativeFloat = 0.3,
        snr: PositiveFloat = 1.0,
        feature_noise: NonNegativeFloat = 0.1,
        n_train: PositiveInt = 2000,
        n_val: PositiveInt = 500,
        n_test: PositiveInt = 500,
        seed: int = 0,
        batch_size: PositiveInt = 256,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if active_atoms > n_brain_atoms + n_nuisance_atoms:
            raise ValueError(f"active_atoms must be <= n_brain_atoms + n_nuisance_atoms = "
                             f"{n_brain_atoms + n_nuisance_atoms}, got {active_atoms}")
        self.n_features, self.n_brain_atoms, self.n_nuisance_atoms = n_features, n_brain_atoms, n_nuisance_atoms
        self.nuisance_scale, self.active_atoms = nuisance_scale, active_atoms
        self.n_subjects, self.n_voxels, self.subject_deviation = n_subjects, n_voxels, subject_deviation
        self.snr, self.feature_noise = snr, feature_noise
        self.sizes = {"train": n_train, "val": n_val, "test": n_test}
        self.seed = seed
        rng = np.random.default_rng(seed)
        atoms = rng.standard_normal((n_brain_atoms + n_nuisance_atoms, n_features))
        atoms /= np.linalg.norm(atoms, axis=1, keepdims=True)
        self.planted_atoms, self.nuisance_atoms = atoms[:n_brain_atoms], atoms[n_brain_atoms:]
        shared = rng.standard_normal((n_brain_atoms, n_voxels))
        self.maps = [shared + subject_deviation * rng.standard_normal((n_brain_atoms, n_voxels))
                     for _ in range(n_subjects + 1)]

    def _codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        total = self.n_brain_atoms + self.n_nuisance_atoms
        codes = np.zeros((n, total))
        chosen = np.argsort(rng.random((n, total)), axis=1)[:, : self.active_atoms]
        amplitude = 0.5 + np.abs(rng.standard_normal((n, self.active_atoms)))
        amplitude = np.where(chosen >= self.n_brain_atoms, self.nuisance_scale * amplitude, amplitude)
        np.put_along_axis(codes, chosen, amplitude, axis=1)
        return codes

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng([self.seed, 1])
        atoms = np.concatenate([self.planted_atoms, self.nuisance_atoms])
        codes = {split: self._codes(n, rng) for split, n in self.sizes.items()}
        signal_std = [(codes["train"][:, : self.n_brain_atoms] @ m).std(0) for m in self.maps]
        out: dict[str, Arrays] = {}
        for split, c in codes.items():
            x = c @ atoms + self.feature_noise * rng.standard_normal((len(c), self.n_features))
            responses = [c[:, : self.n_brain_atoms] @ m / std for m, std in zip(self.maps, signal_std)]
            y = np.stack(responses, 1) + rng.standard_normal((len(c), self.n_subjects + 1, self.n_voxels)) / np.sqrt(self.snr)
            out[split] = {"x": x.astype(np.float32), "y": y[:, :-1].astype(np.float32),
                          "y_new": y[:, -1].astype(np.float32)}
        return out


class StoryFMRI(ArrayDataModule):
    """Story-listening fMRI (e.g. LeBel et al. 2023, OpenNeuro ds003020) from a local folder.

    The folder holds `stories.json` {"train": [run, ...], "val": [...], "test": [...],
    "subjects": [subject, ...], "held_out_subject": subject}, and per run `features/<run>.npy`
    (TRs x d, the LM features already delayed and resampled to the TRs) and per subject and run
    `<subject>/<run>.nii.gz` (the preprocessed BOLD series, its TRs aligned with the features), and
    `mask.nii.gz` (the cortical voxels, in the subjects' common space). Voxels come from nilearn's
    NiftiMasker (the `brain` extra), z-scored per run.

    Args:
        root: The folder; null reads $BRAIN_SAE_FMRI_ROOT.
        trim: TRs dropped at the start and end of every run (onset transients).
        max_voxels: Keep the first this many mask voxels (null: all).
        val_fraction: Unused when stories.json names val runs.
        batch_size: TRs per batch.
    """

    def __init__(self, root: str | None = None, trim: NonNegativeInt = 10, max_voxels: PositiveInt | None = None,
                 val_fraction: ProperFraction = 0.1, batch_size: PositiveInt = 256) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, standardize=True)
        self.root = Path(local_path("story_fmri", "data.root", root, "BRAIN_SAE_FMRI_ROOT",
                                    "the story-listening fMRI folder", needs=("stories.json", "mask.nii.gz"),
                                    how="Preprocess ds003020 (or another story-listening set) into that layout"))
        self.layout = json.loads((self.root / "stories.json").read_text())
        for key in ("train", "test", "subjects", "held_out_subject"):
            if key not in self.layout:
                raise ValueError(f"story_fmri: {self.root / 'stories.json'} has no '{key}'")
        self.trim, self.max_voxels = trim, max_voxels
        self.planted_atoms = None

    def load(self) -> dict[str, Arrays]:
        maskers = require("nilearn.maskers", "data 'story_fmri'")
        masker = maskers.NiftiMasker(mask_img=str(self.root / "mask.nii.gz"), standardize="zscore_sample").fit()
        subjects = [*self.layout["subjects"], self.layout["held_out_subject"]]
        out: dict[str, Arrays] = {}
        for split in ("train", "val", "test"):
            xs, ys = [], []
            for run in self.layout.get(split, []):
                x = np.load(self.root / "features" / f"{run}.npy")
                per_subject = [masker.transform(str(self.root / s / f"{run}.nii.gz")) for s in subjects]
                n = min(len(x), *(len(v) for v in per_subject))
                keep = slice(self.trim, n - self.trim)
                xs.append(x[keep])
                ys.append(np.stack([v[keep, : self.max_voxels] for v in per_subject], 1))
            if xs:
                y = np.concatenate(ys).astype(np.float32)
                out[split] = {"x": np.concatenate(xs).astype(np.float32), "y": y[:, :-1], "y_new": y[:, -1]}
        return out
