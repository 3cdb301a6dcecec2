"""Claim functions of the adapters family (plain Python, no torch): registered as `claim_functions`.

`column_at(values, params, setting)`: each seed's value at one setting of a swept grid, e.g. every
seed's test accuracy of a LoRA variant at its tuned learning rate,
`column_at(column(lora, 'test/accuracy'), param(lora, 'optimizer.lr'),
best(lora, 'optimizer.lr', 'test/accuracy', 'max'))`, so that two variants' tuned accuracies can be
compared seed by seed (`paired_margin`). The values come in trial order, which for arms of one
sweep spec is the same seed order in each. A `setting` that is a range (a best rate at the grid's
edge, or a tie) makes the call undecided in the check language (framework.claims.evidence), so a
claim on it is inconclusive.
"""

from __future__ import annotations

import math
from typing import Any


def column_at(values: list[float], params: list[Any], setting: float | int | str | bool) -> list[float]:
    """The values whose param equals `setting` (numbers compared to a relative 1e-9), in trial order:
    one per seed at that setting; a ValueError naming the settings there are when none match."""
    if len(values) != len(params) or not values:
        raise ValueError(f"column_at needs two equal-length, non-empty lists, got {len(values)} values "
                         f"and {len(params)} params")
    hits = [v for v, p in zip(values, params) if _equal(p, setting)]
    if not hits:
        raise ValueError(f"column_at: no trial with setting {setting!r}; settings: {sorted(set(map(str, params)))}")
    return hits


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b
