"""The functions a claim's check can call: a few builtins, and the registered `claim_functions` kind.

Builtins are the arithmetic every check needs (abs, min, max, mean, log, sqrt, len). Everything
else, from curve shapes (slope, r2, non_increasing: components/claim_functions/) to a family's
laws (sae's data_constrained_r2), is a registry entry, so a paper adds its own in its family
package and framework/ stays the same. Each is a plain function of numbers and lists of numbers
(what `alias['metric']`, `column(...)` and `param(...)` give). The language's own accessors of
sweep runs (`column`, `param`, `seed_mean`, `seed_sd`, `seed_param`) live in `framework.claims.expressions`.
"""

from __future__ import annotations

import inspect
import math
import statistics
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import registry


def mean(xs: list[float]) -> float:
    """Arithmetic mean of a non-empty list."""
    return statistics.fmean(xs)


BUILTINS: dict[str, tuple[Callable[..., Any], str]] = {
    "abs": (abs, "absolute value"),
    "min": (min, "smallest of a list or of the arguments"),
    "max": (max, "largest of a list or of the arguments"),
    "mean": (mean, "mean of a list"),
    "log": (math.log, "natural logarithm"),
    "sqrt": (math.sqrt, "square root"),
    "len": (len, "length of a list"),
}


class Functions(Mapping[str, tuple[Callable[..., Any], str]]):
    """name -> (function, one-line description): the builtins, then the registered claim
    functions (imported when a check first calls one)."""

    def _registered(self) -> registry.Registry:
        return registry.KINDS["claim_functions"]

    def __getitem__(self, name: str) -> tuple[Callable[..., Any], str]:
        if name in BUILTINS:
            return BUILTINS[name]
        function = self._registered().load(name)  # UnknownComponent (a KeyError) when absent
        return function, (inspect.getdoc(function) or "").split("\n")[0]

    def __iter__(self) -> Iterator[str]:
        return iter([*BUILTINS, *(n for n in self._registered().names() if n not in BUILTINS)])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __contains__(self, name: object) -> bool:
        return name in BUILTINS or name in self._registered()


FUNCTIONS = Functions()
