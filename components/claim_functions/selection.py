"""Picking out of a sweep: the spread of a list, the value at a given setting, the setting of the
best value. For claims.yaml checks over a sweep's per-configuration lists (`seed_mean(...)`,
`seed_param(...)`, `column(...)`, `param(...)`), e.g. each method's best over a learning-rate grid
(`max(seed_mean(lora, 'test/accuracy'))`), its value at one fixed rate, and which rate was best.

Plain Python over lists, so evaluating claims never imports torch.
"""

from __future__ import annotations

import math
from typing import Any

from framework.claims.evidence import best_setting


def spread(xs: list[float]) -> float:
    """Largest minus smallest value of a non-empty list (0 for one value)."""
    if not xs:
        raise ValueError("spread needs a non-empty list")
    return max(xs) - min(xs)


def value_at(values: list[float], params: list[Any], setting: float | int | str | bool) -> float:
    """The value whose param equals `setting` (numbers compared to a relative 1e-9), from two
    equal-length lists; a ValueError naming the settings there are when none or several match."""
    _same_length("value_at", values, params)
    hits = [v for v, p in zip(values, params) if _equal(p, setting)]
    if len(hits) != 1:
        found = "no" if not hits else f"{len(hits)}"
        raise ValueError(f"value_at: {found} configuration(s) with setting {setting!r}; settings: {params}")
    return hits[0]


def argmax_param(values: list[float], params: list[Any]) -> Any:
    """The param of the largest value, e.g. a method's best learning rate: a number when it is an
    interior point of the swept grid; at the grid's first or last point a range open beyond it
    (the optimum may lie outside the grid), over tied settings their span: comparisons with such
    a range are inconclusive unless they hold for all of it (framework.claims.evidence)."""
    _same_length("argmax_param", values, params)
    return best_setting(values, params, largest=True)


def argmin_param(values: list[float], params: list[Any]) -> Any:
    """The param of the smallest value, e.g. the lowest-loss setting; at the grid's edge or on a
    tie a range, as for argmax_param."""
    _same_length("argmin_param", values, params)
    return best_setting(values, params, largest=False)


def _same_length(name: str, values: list[Any], params: list[Any]) -> None:
    if len(values) != len(params) or not values:
        raise ValueError(f"{name} needs two equal-length, non-empty lists, got {len(values)} values and {len(params)} params")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b
