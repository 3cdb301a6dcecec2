"""components/adapters/data.py: the digits transfer task (inverted, turned, relabelled digits)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn import datasets

from components.adapters.data import DigitsTransfer
from components.data.sklearn import SklearnDataset


def test_pixels_are_inverted_and_reversed_and_labels_permuted() -> None:
    raw = datasets.load_digits()
    loaded = DigitsTransfer(label_multiplier=3, label_offset=1).load()
    image = raw.data[5] / 16.0
    np.testing.assert_allclose(loaded["x"][5], 1.0 - image[::-1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(loaded["x"][5].reshape(8, 8), np.rot90(1.0 - raw.images[5] / 16.0, 2), atol=1e-7)
    assert [int(loaded["y"][raw.target == y][0]) for y in range(10)] == [1, 4, 7, 0, 3, 6, 9, 2, 5, 8]


def test_without_changes_it_is_the_digits_of_sklearn_dataset() -> None:
    """Same split seed, same standardization: the untouched transfer task is the pretraining data."""
    plain = DigitsTransfer(invert=False, reverse=False, label_multiplier=1, label_offset=0, split_seed=4)
    digits = SklearnDataset(name="digits", split_seed=4)
    for split in ("train", "val", "test"):
        assert torch.allclose(plain.split(split)["x"], digits.split(split)["x"], atol=1e-5)
        assert torch.equal(plain.split(split)["y"], digits.split(split)["y"])
    assert DigitsTransfer().info() == {"in_features": 64, "num_classes": 10}


def test_a_label_map_that_is_not_a_permutation_is_refused() -> None:
    with pytest.raises(ValueError) as error:
        DigitsTransfer(label_multiplier=4)
    assert str(error.value) == ("label_multiplier must be coprime with 10 (1, 3, 7, 9, ...) so that labels stay a "
                                "permutation, got 4")
