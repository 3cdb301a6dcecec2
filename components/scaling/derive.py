"""Width-scaling exponents from a traced program, by solving a linear system (AutoP's solver).

Seed paper: "automatic parameterization" (AutoP, NeurIPS 2026; specs/autop/README.md): every
primitive instruction of the training program imposes a constraint on the exponents of the
hyperparameters, like matched units in dimensional analysis; the exponents solve the system.

Unknowns, for width multiplier m (each quantity ~ m ** -exponent):
- per parameter p: `init` b_p (init std) and `lr` c_p (learning rate);
- per use u of a parameter (components.scaling.trace.Use): `multiplier` a_u on the op's result.

Per use u of p, with k = the summed width exponents of the contracted dimensions (how many terms
the op sums, as a power of m; 0 for lookups and elementwise ops), the primitive rules, for an
optimizer whose update entries are proportional to its learning rate (Adam, AdamW, SignSGD):

1. **update** (a correlated sum: the update is aligned with the op's input, so k^1):
   the update's contribution to the op's result is Theta(1): a_u + c_p = k.
2. **init, internal** (an independent sum, central limit: k^(1/2)): the init contribution of an
   op whose result has a width-growing dimension (it feeds later ops) is Theta(1): a_u + b_p = k / 2.
3. **init, readout**: for an op that contracts a growing dimension into a result with no growing
   dimension (logits), the init contribution is no larger than one update's: a_u + b_p = k.
4. **gauge**: a parameter's first use carries no multiplier, a_u = 0 (the system is invariant
   under a_u + t, b_p - t, c_p - t; this fixes t as Tensor Programs V's Table 3 does). A tensor used
   twice (tied embeddings) gets its second use's scale from a multiplier.

Weight decay: the decoupled decay lr * lambda * W of AdamW keeps each step's relative decay at
Theta(1) when lambda ~ m ** +c_p (lr * lambda constant).

The system is solved exactly (sympy, rationals); an inconsistent system or one with free
exponents is a ValueError naming the constraints, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import sympy

from components.scaling.trace import Use, WidthTrace


@dataclass(frozen=True)
class Exponents:
    """The derived width exponents of one parameter (each quantity ~ m ** -exponent).

    Attributes:
        init: Init std exponent b.
        lr: Learning-rate exponent c (weight decay gets -c).
        fan_in: k of its first use: the summed exponent of the dims that use contracts.
        fan_out: The summed exponent of its other, non-indexed dims.
    """

    init: Fraction
    lr: Fraction
    fan_in: Fraction
    fan_out: Fraction


@dataclass(frozen=True)
class Derivation:
    """Exponents per parameter, and the multiplier exponent a_u of every use that has one."""

    params: dict[str, Exponents]
    multipliers: dict[int, Fraction]  # index into the trace's uses -> a_u (non-zero ones only)
    equations: list[str]


def _contracted(use: Use, dims: tuple[Fraction, ...]) -> Fraction:
    return sum((dims[d] for d in use.contracted), Fraction(0))


def _free(use: Use, dims: tuple[Fraction, ...]) -> Fraction:
    return sum((e for d, e in enumerate(dims) if d not in use.contracted and d not in use.indexed), Fraction(0))


def derive_width(trace: WidthTrace) -> Derivation:
    """Solve the module docstring's system for every traced parameter."""
    bad = sorted({f"{u.param} ({u.op[len('unsupported:'):]})" for u in trace.uses if u.op.startswith("unsupported:")})
    if bad:
        raise ValueError(f"autop has no scaling rule for these parameter uses: {', '.join(bad)}")
    unused = sorted(set(trace.dims) - {u.param for u in trace.uses})
    if unused:
        raise ValueError(f"parameters the traced forward pass never uses (no constraint): {', '.join(unused)}")
    names = sorted(trace.dims)
    b = {n: sympy.Symbol(f"init[{n}]") for n in names}
    c = {n: sympy.Symbol(f"lr[{n}]") for n in names}
    a = {i: sympy.Symbol(f"mult[{i}:{u.param}]") for i, u in enumerate(trace.uses)}
    equations, seen = [], set()
    for i, use in enumerate(trace.uses):
        k = sympy.Rational(_contracted(use, trace.dims[use.param]))
        readout = k > 0 and _free(use, trace.dims[use.param]) == 0
        equations.append(sympy.Eq(a[i] + c[use.param], k))
        equations.append(sympy.Eq(a[i] + b[use.param], k if readout else k / 2))
        if use.param not in seen:
            equations.append(sympy.Eq(a[i], 0))
            seen.add(use.param)
    unknowns = [*b.values(), *c.values(), *a.values()]
    solution = _solve(equations, unknowns)
    first = {}
    for i, use in enumerate(trace.uses):
        first.setdefault(use.param, use)
    params = {n: Exponents(Fraction(str(solution[b[n]])), Fraction(str(solution[c[n]])),
                           _contracted(first[n], trace.dims[n]), _free(first[n], trace.dims[n])) for n in names}
    multipliers = {i: Fraction(str(solution[a[i]])) for i in a if solution[a[i]] != 0}
    return Derivation(params, multipliers, [str(e) for e in equations])


def _solve(equations: list[sympy.Eq], unknowns: list[sympy.Symbol]) -> dict[sympy.Symbol, sympy.Rational]:
    """The unique exact solution, or a ValueError saying why there is none."""
    matrix, rhs = sympy.linear_eq_to_matrix(equations, unknowns)
    try:
        solution, free = matrix.gauss_jordan_solve(rhs)
    except ValueError:
        raise ValueError("the scaling constraints contradict each other (no exponents satisfy all of them)") from None
    if free.shape[0]:
        loose = [str(u) for u, row in zip(unknowns, solution) if row.free_symbols]
        raise ValueError(f"the scaling constraints leave exponents free: {', '.join(loose)}")
    return dict(zip(unknowns, solution))
