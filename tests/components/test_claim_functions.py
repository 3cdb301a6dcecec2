"""components/claim_functions/curves.py: the curve shapes claims check."""

from __future__ import annotations

import math

import pytest

from components.claim_functions.curves import loglog_slope, non_decreasing, non_increasing, r2, slope


def test_slope_and_r2_of_a_line_and_of_noise() -> None:
    assert slope([1, 2, 3, 4], [3, 5, 7, 9]) == 2.0
    assert r2([1, 2, 3, 4], [3, 5, 7, 9]) == 1.0
    assert r2([1, 2, 3, 4], [1, -1, 1, -1]) < 0.3
    assert r2([1, 2, 3], [5, 5, 5]) == 1.0  # a flat line is fitted exactly


def test_loglog_slope_is_a_power_laws_exponent() -> None:
    xs = [1, 2, 4, 8, 16]
    assert math.isclose(loglog_slope(xs, [3 * x ** -0.5 for x in xs]), -0.5)


@pytest.mark.parametrize(
    "xs, ys, message",
    [([1], [2], "slope needs two equal-length lists of >= 2 values, got 1 and 1"),
     ([1, 2], [1], "slope needs two equal-length lists of >= 2 values, got 2 and 1"),
     ([2, 2], [1, 3], "slope needs at least two different xs")],
)
def test_slope_rejects_what_has_no_slope(xs: list[float], ys: list[float], message: str) -> None:
    with pytest.raises(ValueError) as error:
        slope(xs, ys)
    assert str(error.value) == message


def test_monotone_with_slack() -> None:
    assert non_increasing([3, 2, 2.01, 1], slack=0.02) and not non_increasing([3, 2, 2.05, 1], slack=0.02)
    assert non_decreasing([1, 2, 1.99, 3], slack=0.02) and not non_decreasing([1, 2, 1.9], slack=0.02)


def test_interpolate_reads_a_line_per_seed() -> None:
    from components.claim_functions.curves import interpolate

    assert interpolate(0.5, 0.0, 1.0, 1.0, 3.0) == 2.0
    assert interpolate([0.5, 0.25], [0.0, 0.0], [1.0, 0.0], 1.0, [3.0, 4.0]) == [2.0, 1.0]
    with pytest.raises(ValueError, match="one non-empty length, got lengths \\[1, 2\\]"):
        interpolate([0.5], [0.0, 1.0], 1.0, 1.0, 3.0)
    with pytest.raises(ValueError, match="x0 != x1"):
        interpolate(0.5, 1.0, 1.0, 1.0, 3.0)
