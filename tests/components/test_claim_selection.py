"""components/claim_functions/selection.py: picking out of a sweep (spread, value at a setting, best setting)."""

from __future__ import annotations

import pytest

from components.claim_functions.selection import argmax_param, argmin_param, spread, value_at

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
    assert argmax_param([0.7, 0.9, 0.8], LRS) == 1.0e-3
    assert argmax_param([0.9, 0.9, 0.8], LRS) == 1.0e-4  # the first of equal values
    assert argmin_param([0.7, 0.9, 0.6], LRS) == 1.0e-2
    with pytest.raises(ValueError, match="argmax_param needs two equal-length"):
        argmax_param([], [])
