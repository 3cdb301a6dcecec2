"""Value ranges for constructor arguments, written as types: ``batch_size: PositiveInt = 64``.

The range is part of the signature, so it reaches the committed schema (`exp schema`) as JSON
Schema bounds (``minimum``, ``exclusiveMinimum``, ...) and `exp validate` rejects a value outside
it with a located message ("data.batch_size: must be >= 1, got integer 0") without importing
torch; `exp run` checks the same bounds from the live signature before anything is built. A
constructor therefore does not repeat these checks; it keeps only those that relate two arguments
(``val_fraction + test_fraction < 1``) or need the data.

One spelling: ``Annotated[T, <annotated_types constraint>]`` (`annotated_types` is the small
package pydantic uses for the same purpose). An integer argument takes YAML integers only: 64.0 or
1e100 is "expected an integer", never rounded. A bounded number rejects NaN.
"""

from typing import Annotated

from annotated_types import Ge, Gt, Interval

# Sizes, widths, depths, counts, batch sizes, epochs, steps, devices: at least one.
PositiveInt = Annotated[int, Ge(1)]
# Worker processes, offsets, optional repetitions: zero allowed.
NonNegativeInt = Annotated[int, Ge(0)]
# Learning rates, temperatures, scales, tolerances: strictly positive.
PositiveFloat = Annotated[float, Gt(0)]
# Weight decay, noise levels, weights, margins: zero allowed.
NonNegativeFloat = Annotated[float, Ge(0)]
# Probabilities and fractions of a whole, both ends included.
Probability = Annotated[float, Interval(ge=0, le=1)]
# Dropout, label smoothing, a held-out fraction: 1 would drop, smooth or hold out everything.
ProperFraction = Annotated[float, Interval(ge=0, lt=1)]
# A fraction that must leave something on both sides: neither 0 nor 1.
OpenFraction = Annotated[float, Interval(gt=0, lt=1)]
