"""The diffusion family's claim function and the digit-defects defect stream."""

from __future__ import annotations

import numpy as np
import pytest

from components.diffusion.claims import min_margin
from components.diffusion.digit_defects import DigitDefects


def test_min_margin_is_the_smallest_paired_difference() -> None:
    assert min_margin([0.3, 0.2, 0.5], [0.1, 0.15, 0.1]) == pytest.approx(0.05)
    with pytest.raises(ValueError, match="equal length"):
        min_margin([0.1], [0.1, 0.2])


def test_defect_stream_draws_other_defects_on_the_same_split() -> None:
    train = DigitDefects(defect_fraction=1.0, copies=1, split_seed=3).load()
    probe = DigitDefects(defect_fraction=1.0, copies=1, split_seed=3, defect_stream=1).load()
    np.testing.assert_array_equal(train["y"], probe["y"])
    assert not np.array_equal(train["defect_mask"], probe["defect_mask"])
    again = DigitDefects(defect_fraction=1.0, copies=1, split_seed=3, defect_stream=1).load()
    np.testing.assert_array_equal(probe["defect_mask"], again["defect_mask"])
