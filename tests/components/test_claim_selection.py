"""components/claim_functions/selection.py: picking out of a sweep (spread, value at a setting, best setting)."""

from __future__ import annotations

import pytest

import math

from components.claim_functions.selection import argmax_param, argmin_param, spread, value_at
from framework.claims.evidence import Interval, Undecided

LRS = [1.0e-4, 1.0e-3, 1.0e-2]


def test_spread_is_largest_minus_smallest() -> None:
    assert spread([0.9, 0.85, 0.93]) == pytest.approx(0.08)
    assert spread([0.5]) == 0.0
    with pytest.raises(ValueError, match="spread needs a non-empty list"):
        spread([])


def test_value_at_reads_the_configuration_of_a_setting() -> None:
    assert value_at([0.7, 0.9, 0.8], LRS, 0.001) == 0.9
    assert value_at([0.7, 0.9, 0.8], LRS, 1.0e-3 * (1 + 1e-12)) == 0.9  # a float written another way
    assert value_at([1.0, 2.0], ["lora", "dora"], "dora") == 2.0


@pytest.mark.parametrize(
    "values, params, setting, message",
    [([0.7, 0.9, 0.8], LRS, 0.003, "value_at: no configuration(s) with setting 0.003; settings: [0.0001, 0.001, 0.01]"),
     ([0.7, 0.9], [0.1, 0.1], 0.1, "value_at: 2 configuration(s) with setting 0.1; settings: [0.1, 0.1]"),
     ([0.7], LRS, 0.001, "value_at needs two equal-length, non-empty lists, got 1 values and 3 params")],
)
def test_value_at_names_what_does_not_match(values: list[float], params: list, setting: float, message: str) -> None:
    with pytest.raises(ValueError) as error:
        value_at(values, params, setting)
    assert str(error.value) == message


def test_argmax_and_argmin_param_pick_the_best_setting() -> None:
    assert argmax_param([0.7, 0.9, 0.8], LRS) == 1.0e-3  # an interior point: a number
    assert argmin_param([0.7, 0.6, 0.9], LRS) == 1.0e-3
    assert argmax_param([0.7, 0.9, 0.8], ["lora", "dora", "pissa"]) == "dora"  # not numbers: no grid edges


def test_an_optimum_at_the_grid_edge_or_a_tie_is_a_range() -> None:
    top = argmin_param([0.7, 0.9, 0.6], LRS)  # best at the last point: the optimum may lie beyond it
    assert isinstance(top, Interval) and (top.low, top.high) == (1.0e-2, math.inf)
    assert "best at the grid's last point 0.01" in repr(top)
    assert isinstance(top > 1.0e-3, bool) and (top > 1.0e-3) is True  # decided for the whole range
    assert isinstance(top / 1.0e-2 <= 2, Undecided)  # "within one octave of 0.01" cannot be decided
    assert (top / 1.0e-3 <= 2) is False  # but "within one octave of 0.001" is refuted
    bottom = argmax_param([0.9, 0.8, 0.7], LRS)
    assert (bottom.low, bottom.high) == (-math.inf, 1.0e-4)
    tie = argmax_param([0.5, 0.9, 0.9, 0.1], [1, 2, 3, 4])  # an exact tie: the span of the tied settings
    assert (tie.low, tie.high) == (2, 3) and "a tie of 0.9 at [2, 3]" in repr(tie)
    assert isinstance(tie < 3, Undecided) and (tie < 4) is True
    # equal but for the last float bit (0.9259 at two rates, computed in different orders) is a tie
    rounded = argmax_param([0.1, 0.1 + 0.2, 0.3, 0.2], [1, 2, 3, 4])
    assert (rounded.low, rounded.high) == (2, 3)
    assert argmax_param([0.1, 0.3001, 0.3, 0.2], [1, 2, 3, 4]) == 2  # a real difference is not a tie
    assert isinstance(argmax_param([0.9, 0.9], ["a", "b"]), Undecided)
    with pytest.raises(ValueError, match="argmax_param needs two equal-length"):
        argmax_param([], [])
