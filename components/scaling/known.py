"""The hand-derived width rules autop's derivation is checked against, and the LR-shift measure.

muP for Adam, in the form of Yang et al. 2022, "Tensor Programs V: Tuning Large Neural Networks
via Zero-Shot Hyperparameter Transfer" (arXiv:2203.03466), Table 3, with m the width multiplier
and each quantity ~ m ** -exponent, by the parameter's number of width-growing dimensions:

    role      growing dims                       init std   Adam LR   output multiplier
    hidden    2 (fan-in and fan-out)             1/2        1         -
    output    1: fan-in (the readout layer)      1          1         -
    vector    <= 1 otherwise (input weights,     0          0         -
              biases, norm gains, embeddings)
    tied      the readout shares the embedding   0          0         1 (MuSharedReadout of the
                                                                         `mup` package)

The table needs to be told which layer is the readout (as `mup` needs MuReadout in the model);
the derivation finds it in the trace. The table is written here so that autop is checked against
the paper's rules, not against itself.
"""

from __future__ import annotations

import math
from fractions import Fraction

from components.scaling.autop import AutoParametrized
from framework.claims.evidence import Interval, best_setting, bounds

HIDDEN, OUTPUT, VECTOR = (Fraction(1, 2), Fraction(1)), (Fraction(1), Fraction(1)), (Fraction(0), Fraction(0))


def mup_adam(growing: int, readout: bool) -> tuple[Fraction, Fraction]:
    """(init std exponent, Adam LR exponent) of Table 3 for a parameter with `growing` width
    dimensions; `readout` marks the untied readout weight."""
    if readout:
        return OUTPUT
    return HIDDEN if growing >= 2 else VECTOR


class ExponentCheck:
    """Compares the exponents an `autop` model applies with muP's table (module docstring).

    Returns `exponent_error` (the largest |applied - table| over every parameter's init and LR
    exponents and the output multiplier's; 0 is an exact match), `parameters` (how many were
    compared) and `hidden_lr_exponent` (the applied LR exponent of the first hidden-role tensor).

    Args:
        readout: Names of the readout's weight (e.g. `head.weight`); empty for a model whose
            readout is tied to its embedding.
        tied: The readout is the embedding matrix (output multiplier m^-1 in the table).
    """

    splits = ("test",)

    def __init__(self, readout: tuple[str, ...] = (), tied: bool = False) -> None:
        if tied and readout:
            raise ValueError("a tied readout has no weight of its own: give readout or tied, not both")
        self.readout, self.tied = set(readout), tied

    def __call__(self, model: AutoParametrized, splits: dict) -> dict[str, float]:
        if not isinstance(model, AutoParametrized):
            raise TypeError(f"scaling_exponents reads an `autop` model, got {type(model).__name__}")
        missing = self.readout - set(model.exponents)
        if missing:
            raise ValueError(f"readout names no parameter of the model: {sorted(missing)}")
        applied = applied_exponents(model)
        error, hidden_lr = Fraction(0), None
        for name, (init, lr) in applied.items():
            growing = sum(1 for e in model.trace.dims[name] if e > 0)
            table = mup_adam(growing, name in self.readout)
            if model.trace.init[name] is not None:  # a constant init has no std exponent
                error = max(error, abs(init - table[0]))
            error = max(error, abs(lr - table[1]))
            if hidden_lr is None and growing >= 2:
                hidden_lr = lr
        table_output = Fraction(1) if self.tied else Fraction(0)
        applied_output = -Fraction(math.log(model.output_scale) / math.log(model.multiplier)).limit_denominator(12) \
            if model.multiplier > 1 else table_output
        error = max(error, abs(applied_output - table_output))
        return {"exponent_error": float(error), "parameters": float(len(applied)),
                "hidden_lr_exponent": float(hidden_lr if hidden_lr is not None else math.nan)}


def applied_exponents(model: AutoParametrized) -> dict[str, tuple[Fraction, Fraction]]:
    """name -> (init std exponent, LR exponent) the model actually uses: the derived ones under
    `rule: derived`; the model's own measured init and one LR (exponent 0) under `standard`."""
    if model.rule == "derived":
        return {n: (e.init, e.lr) for n, e in model.exponents.items()}
    return {n: (model.trace.init[n] or Fraction(0), Fraction(0)) for n in model.exponents}


def lr_shift(values_a: list[float], lrs_a: list[float], values_b: list[float], lrs_b: list[float],
             step: float) -> float:
    """|log(best lr of b / best lr of a)| / log(step): how many grid steps (a factor `step` each)
    the lowest-value learning rate moves from sweep a to sweep b (e.g. narrow -> wide)."""
    if step <= 1:
        raise ValueError(f"step must be > 1 (the grid's factor), got {step}")
    if len(values_a) != len(lrs_a) or len(values_b) != len(lrs_b) or not values_a or not values_b:
        raise ValueError("lr_shift needs two non-empty pairs of equal-length lists (values, learning rates)")
    a, b = (best_setting(v, lrs, largest=False) for v, lrs in ((values_a, lrs_a), (values_b, lrs_b)))
    if not isinstance(a, Interval) and not isinstance(b, Interval):
        return abs(math.log(b / a)) / math.log(step)
    # a best rate at its grid's edge (or tied) is a range: so is the shift
    (a_low, a_high), (b_low, b_high) = bounds(a), bounds(b)
    steps = [_log_ratio(b_low, a_high) / math.log(step), _log_ratio(b_high, a_low) / math.log(step)]
    what = "; ".join(x.what for x in (a, b) if isinstance(x, Interval))
    return abs(Interval(steps[0], steps[1], what))


def _log_ratio(top: float, bottom: float) -> float:
    """log(top / bottom) for rates in [0, inf] (an edge's range may be open: -inf below, inf above)."""
    if top <= 0 or bottom == math.inf:
        return -math.inf
    if bottom <= 0 or top == math.inf:
        return math.inf
    return math.log(top / bottom)
