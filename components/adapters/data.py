"""A downstream task for fine-tuning a model pretrained on sklearn's digits: the same images,
changed so that the pretrained features no longer fit and the labels mean something else."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn import datasets

from components.data.base import Arrays, ArrayDataModule
from components.types import NonNegativeInt, PositiveInt

CLASSES = 10


class DigitsTransfer(ArrayDataModule):
    """sklearn's 8x8 digits as a transfer task: each image's pixels x in [0, 1] (pixel / 16) become
    1 - x with `invert`, their order is reversed with `reverse` (the image turned by 180 degrees),
    and the label y becomes (label_multiplier * y + label_offset) mod 10, a permutation of the 10
    classes (label_multiplier must be coprime with 10). x is (N, 64) float32, standardized with
    train statistics by default, as `sklearn_dataset`'s digits are.

    Args:
        invert: Replace each pixel x by 1 - x.
        reverse: Reverse the order of the 64 pixels.
        label_multiplier: a in y -> (a y + b) mod 10; 1, 3, 7 or 9 (coprime with 10).
        label_offset: b in y -> (a y + b) mod 10.

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        invert: bool = True,
        reverse: bool = True,
        label_multiplier: PositiveInt = 3,
        label_offset: NonNegativeInt = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if math.gcd(label_multiplier, CLASSES) != 1:
            raise ValueError(f"label_multiplier must be coprime with {CLASSES} (1, 3, 7, 9, ...) so that labels "
                             f"stay a permutation, got {label_multiplier}")
        self.invert, self.reverse = invert, reverse
        self.label_multiplier, self.label_offset = label_multiplier, label_offset

    def load(self) -> Arrays:
        bunch = datasets.load_digits()
        x = np.asarray(bunch.data, dtype=np.float32) / 16.0
        if self.invert:
            x = 1.0 - x
        if self.reverse:
            x = x[:, ::-1].copy()
        y = (self.label_multiplier * np.asarray(bunch.target, dtype=np.int64) + self.label_offset) % CLASSES
        return {"x": x, "y": y}
