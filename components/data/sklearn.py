"""Small datasets that ship inside scikit-learn (no download): digits, breast_cancer, wine, iris,
diabetes."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from sklearn import datasets

from components.data.base import Arrays, ArrayDataModule

LOADERS = {
    "digits": datasets.load_digits,
    "breast_cancer": datasets.load_breast_cancer,
    "wine": datasets.load_wine,
    "iris": datasets.load_iris,
    "diabetes": datasets.load_diabetes,
}
REGRESSION = {"diabetes"}
IMAGES = {"digits"}


class SklearnDataset(ArrayDataModule):
    """One of scikit-learn's bundled toy datasets as an in-memory data module.

    Classification targets are long labels 0..K-1 (digits 10, breast_cancer 2, wine 3, iris 3);
    diabetes is a float32 regression target of shape (N,), in its original units. With
    `as_images`, digits become (N, 1, 8, 8) float32 in [0, 1] (pixel / 16) and are not
    standardized; otherwise x is (N, features).

    Args:
        name: Which bundled dataset.
        as_images: Return digits as 1x8x8 images for a CNN; only valid for name 'digits'.

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        name: Literal["digits", "breast_cancer", "wine", "iris", "diabetes"],
        as_images: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if name not in LOADERS:
            raise ValueError(f"name must be one of {sorted(LOADERS)}, got '{name}'")
        if as_images and name not in IMAGES:
            raise ValueError(
                f"as_images is only valid for image datasets ({', '.join(sorted(IMAGES))}), "
                f"got name '{name}'"
            )
        self.name, self.as_images = name, as_images

    def load(self) -> Arrays:
        bunch = LOADERS[self.name]()
        if self.as_images:
            x = (np.asarray(bunch.images, dtype=np.float32) / 16.0)[:, None, :, :]
        else:
            x = np.asarray(bunch.data, dtype=np.float32)
        if self.name in REGRESSION:
            y = np.asarray(bunch.target, dtype=np.float32)
        else:
            y = np.asarray(bunch.target, dtype=np.int64)
        return {"x": x, "y": y}
