"""Synthetic tabular data from scikit-learn's generators: no files, no downloads, seeded."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from annotated_types import Ge
from sklearn.datasets import make_classification, make_regression

from components.data.base import Arrays, ArrayDataModule
from components.types import NonNegativeFloat, PositiveInt, Probability


def _check_sizes(n_features: int, n_informative: int) -> None:
    if n_informative > n_features:
        raise ValueError(f"n_informative must be in [1, n_features={n_features}], got {n_informative}")


class SyntheticClassification(ArrayDataModule):
    """Gaussian class clusters from `sklearn.datasets.make_classification` (one cluster per class).

    Features beyond `n_informative` are pure noise (no redundant or repeated columns). Labels are
    long integers 0..n_classes-1; batches are {"x": (B, n_features) float32, "y": (B,) long}.

    Args:
        n_samples: Rows in the pool before the train/val/test split.
        n_features: Width of x.
        n_classes: Number of classes, at most 2**n_informative.
        n_informative: Columns that carry the class signal, in [1, n_features].
        noise: Fraction of labels replaced by a random class (make_classification's flip_y), in [0, 1].
        seed: Seed of the generator.

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        n_samples: PositiveInt = 2000,
        n_features: PositiveInt = 8,
        n_classes: Annotated[int, Ge(2)] = 2,
        n_informative: PositiveInt = 4,
        noise: Probability = 0.1,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_sizes(n_features, n_informative)
        if n_classes > 2**n_informative:
            raise ValueError(
                f"n_classes must be <= 2**n_informative = {2**n_informative}, got {n_classes}"
            )
        self.n_samples, self.n_features, self.n_classes = n_samples, n_features, n_classes
        self.n_informative, self.noise, self.seed = n_informative, noise, seed

    def load(self) -> Arrays:
        x, y = make_classification(
            n_samples=self.n_samples,
            n_features=self.n_features,
            n_informative=self.n_informative,
            n_redundant=0,
            n_repeated=0,
            n_classes=self.n_classes,
            n_clusters_per_class=1,
            flip_y=self.noise,
            random_state=self.seed,
        )
        return {"x": x.astype(np.float32), "y": y.astype(np.int64)}


class SyntheticRegression(ArrayDataModule):
    """A random linear target from `sklearn.datasets.make_regression`, scaled to unit variance.

    Unlike make_regression's `noise` (absolute, on targets of scale ~100), `noise` here is the
    standard deviation of Gaussian noise added after each noiseless target column is scaled to
    unit standard deviation, so noise=0.1 means a signal-to-noise ratio of 10 whatever the width.
    Batches are {"x": (B, n_features) float32, "y": (B,) float32}, or (B, n_targets) when
    n_targets > 1.

    Args:
        n_samples: Rows in the pool before the train/val/test split.
        n_features: Width of x.
        n_targets: Number of regression targets.
        n_informative: Columns with a nonzero coefficient, in [1, n_features].
        noise: Standard deviation of the noise relative to the unit-variance signal, >= 0.
        seed: Seed of the generator.

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        n_samples: PositiveInt = 2000,
        n_features: PositiveInt = 8,
        n_targets: PositiveInt = 1,
        n_informative: PositiveInt = 4,
        noise: NonNegativeFloat = 0.1,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        _check_sizes(n_features, n_informative)
        self.n_samples, self.n_features, self.n_targets = n_samples, n_features, n_targets
        self.n_informative, self.noise, self.seed = n_informative, noise, seed

    def load(self) -> Arrays:
        x, y = make_regression(
            n_samples=self.n_samples,
            n_features=self.n_features,
            n_informative=self.n_informative,
            n_targets=self.n_targets,
            noise=0.0,
            random_state=self.seed,
        )
        y = y.reshape(self.n_samples, self.n_targets)
        std = y.std(axis=0)
        std[std == 0] = 1.0
        y = (y - y.mean(axis=0)) / std
        # A separate stream, so changing `noise` leaves x and the noiseless target unchanged.
        y = y + self.noise * np.random.default_rng(self.seed).standard_normal(y.shape)
        if self.n_targets == 1:
            y = y[:, 0]
        return {"x": x.astype(np.float32), "y": y.astype(np.float32)}
