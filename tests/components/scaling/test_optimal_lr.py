"""components/scaling/optimal_lr.py: the basin-centre best LR and the shift between two sweeps."""

from __future__ import annotations

import math

import pytest

from components.scaling.optimal_lr import basin_centre_lr, lr_shift_octaves
from framework.claims.evidence import Interval, Undecided

LRS = [2.0**-10, 2.0**-9, 2.0**-8, 2.0**-7, 2.0**-6]


@pytest.mark.parametrize(("losses", "centre"), [
    ([3.0, 2.5, 2.0, 2.5, 3.0], 2.0**-8),                 # a sharp minimum: the argmin
    ([3.0, 2.5, 2.11, 2.10, 3.0], 2.0**-7.5),             # flat: 2.11 <= 1.01 x 2.10, the geometric mean
    ([math.nan, 2.0, 2.5, math.inf, 3.0], 2.0**-9),        # diverged runs are never in the basin
])
def test_basin_centre_by_hand(losses: list[float], centre: float) -> None:
    assert basin_centre_lr(losses, LRS) == pytest.approx(centre, rel=1e-12)


def test_a_basin_at_the_grid_edge_is_a_range() -> None:
    """2^-10, 2^-9, 2^-8 within 1 %: the basin reaches the grid's first rate and may go on below it."""
    centre = basin_centre_lr([2.10, 2.12, 2.11, 2.5, 3.0], LRS)
    assert isinstance(centre, Interval) and (centre.low, centre.high) == (0.0, pytest.approx(2.0**-9, rel=1e-12))
    assert "basin reaches the grid's first rate 0.0009766" in repr(centre)
    shift = lr_shift_octaves([3.0, 2.5, 2.0, 2.5, 3.0], LRS, [2.0, 2.5, 2.6, 2.7, 3.0], LRS)
    assert (shift.low, shift.high) == (-math.inf, pytest.approx(-2.0, abs=1e-12))
    assert (abs(shift) <= 1) is False and isinstance(abs(shift) <= 3, Undecided)


def test_tolerance_zero_is_the_argmin() -> None:
    assert basin_centre_lr([3.0, 2.5, 2.11, 2.10, 3.0], LRS, tolerance=0.0) == pytest.approx(2.0**-7, rel=1e-12)


def test_shift_in_octaves() -> None:
    narrow, wide = [3.0, 2.5, 2.0, 2.5, 3.0], [3.0, 2.0, 2.6, 2.7, 3.0]
    assert lr_shift_octaves(narrow, LRS, wide, LRS) == pytest.approx(-1.0, abs=1e-12)
    assert lr_shift_octaves(wide, LRS, narrow, LRS) == pytest.approx(1.0, abs=1e-12)
    assert lr_shift_octaves(narrow, LRS, narrow, LRS) == 0.0


@pytest.mark.parametrize(("losses", "lrs", "tolerance", "message"), [
    ([1.0], [0.1, 0.2], 0.01, "two equal-length, non-empty lists, got 1 losses and 2 rates"),
    ([], [], 0.01, "two equal-length, non-empty lists, got 0 losses and 0 rates"),
    ([1.0], [0.1], -0.1, "tolerance must be >= 0, got -0.1"),
    ([math.nan, math.inf], [0.1, 0.2], 0.01, "every loss is non-finite"),
    ([0.0, 1.0], [0.1, 0.2], 0.01, "needs positive losses, got a smallest loss of 0.0"),
])
def test_errors(losses: list[float], lrs: list[float], tolerance: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        basin_centre_lr(losses, lrs, tolerance)
