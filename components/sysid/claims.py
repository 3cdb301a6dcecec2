"""Claim functions of the sysid family (plain Python, no torch): registered as `claim_functions`.

`loglog_slopes_by_seed(values, xs, seeds)`: per seed, the least-squares slope of log(value) against
log(x) over that seed's trials of a grid x seeds sweep -- a power law's exponent, one per seed,
so that a claim can put a confidence interval on it (`paired_margin(loglog_slopes_by_seed(...),
[1.0, 1.0, 1.0]) < 0`: the exponent's interval lies below 1). monotone_barrier reads the number
of simulator queries against the dimension this way:
`loglog_slopes_by_seed(column(run, 'test/n_queries'), param(run, 'task.system.dim'), param(run, 'seed'))`.
"""

from __future__ import annotations

from typing import Any

from components.claim_functions.curves import loglog_slope


def loglog_slopes_by_seed(values: list[float], xs: list[float], seeds: list[Any]) -> list[float]:
    """One log-log slope per seed (in order of first appearance); each seed needs >= 2 distinct xs
    and positive values."""
    if not (len(values) == len(xs) == len(seeds)) or not values:
        raise ValueError(f"loglog_slopes_by_seed needs three equal-length, non-empty lists, got "
                         f"{len(values)}, {len(xs)} and {len(seeds)}")
    groups: dict[Any, tuple[list[float], list[float]]] = {}
    for v, x, s in zip(values, xs, seeds):
        groups.setdefault(s, ([], []))
        groups[s][0].append(float(x))
        groups[s][1].append(float(v))
    return [loglog_slope(x, y) for x, y in groups.values()]
