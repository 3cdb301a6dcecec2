"""Picking out of a sweep: the spread of a list, the value at a given setting, the setting of the
best value. For claims.yaml checks over a sweep's per-configuration lists (`seed_mean(...)`,
`seed_param(...)`, `column(...)`, `param(...)`), e.g. each method's best over a learning-rate grid
(`max(seed_mean(lora, 'test/accuracy'))`), its value at one fixed rate, and which rate was best.

Plain Python over lists, so evaluating claims never imports torch.
"""

from __future__ import annotations

import math
from typing import Any


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
    """The param of the largest value (the first of equal ones): e.g. a method's best learning rate."""
    _same_length("argmax_param", values, params)
    return params[max(range(len(values)), key=lambda i: values[i])]


def argmin_param(values: list[float], params: list[Any]) -> Any:
    """The param of the smallest value (the first of equal ones): e.g. the lowest-loss setting."""
    _same_length("argmin_param", values, params)
    return params[min(range(len(values)), key=lambda i: values[i])]


def _same_length(name: str, values: list[Any], params: list[Any]) -> None:
    if len(values) != len(params) or not values:
        raise ValueError(f"{name} needs two equal-length, non-empty lists, got {len(values)} values and {len(params)} params")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b
