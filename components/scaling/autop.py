"""`autop`: a model node whose width scaling is derived from its own traced forward pass.

Seed paper: "automatic parameterization" (AutoP, NeurIPS 2026; specs/autop/README.md). Wraps ANY
model node; `base` is the same model at the width the hyperparameters were tuned at:

    model:
      type: autop
      model: {type: mlp_mixer, ..., width: 256}    # the model trained
      base: {type: mlp_mixer, ..., width: 32}      # the same model at the tuning width
      example_shape: [2, 64]                      # a dummy input for the trace

The rule, with m the width multiplier model / base (components.scaling.trace.compare_widths) and
the exponents of components.scaling.derive.derive_width:

- init: each parameter is multiplied once, at build, by m ** -(b_derived - b_measured), so its std
  goes as m ** -b_derived whatever the model's own init did (b_measured is read from the two
  builds; a constant-initialized parameter is left as it is);
- learning rate and weight decay: `parameter_groups()` puts each parameter in a group with
  lr_scale m ** -c and weight_decay_scale m ** +c (the task multiplies the spec's optimizer.lr and
  weight_decay: components.tasks.supervised.scaled_groups);
- multipliers: a use with a_u != 0 must produce the model's output (a tied readout); the output
  is multiplied by m ** -a_u. Elsewhere it is a ValueError (not supported, never ignored).

`rule: standard` traces the same way but changes nothing (one group, lr_scale 1): standard
parametrization, the baseline of the transfer experiment, with the same exponents table to read.
At model == base every factor is 1, so both rules are the base model's standard training.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal

import torch
from torch import nn

from components.kinds import Model
from components.scaling.derive import Derivation, Exponents, derive_width
from components.scaling.trace import WidthTrace, compare_widths
from components.types import PositiveInt


class AutoParametrized(nn.Module):
    """A model whose init, per-tensor learning rates and output multiplier follow the derived
    width exponents (module docstring).

    Args:
        model: The model to train (any model node).
        base: The same model at the base (tuning) width; same parameter names. Only traced.
        example_shape: Shape of the dummy input the two forward passes are traced on.
        example: "float" (standard normal entries) or "tokens" (ids 0 and 1).
        rule: "derived" applies the exponents; "standard" keeps the model's own parametrization.
    """

    def __init__(
        self,
        model: Model,
        base: Model,
        example_shape: tuple[PositiveInt, ...],
        example: Literal["float", "tokens"] = "float",
        rule: Literal["derived", "standard"] = "derived",
    ) -> None:
        super().__init__()
        if rule not in ("derived", "standard"):
            raise ValueError(f"rule must be 'derived' or 'standard', got {rule!r}")
        if example not in ("float", "tokens"):
            raise ValueError(f"example must be 'float' or 'tokens', got {example!r}")
        self.model, self.rule = model, rule
        generator = torch.Generator().manual_seed(0)  # the trace must not move the run's RNG
        dummy = (torch.randn(*example_shape, generator=generator) if example == "float"
                 else torch.randint(0, 2, tuple(example_shape), generator=generator))
        self.trace: WidthTrace = compare_widths(model, base, dummy)
        self.derivation: Derivation = derive_width(self.trace)
        self.output_scale = 1.0
        if rule == "derived":
            self._rescale_init()
            self.output_scale = self._output_scale()

    @property
    def multiplier(self) -> float:
        return self.trace.multiplier

    @property
    def exponents(self) -> dict[str, Exponents]:
        return self.derivation.params

    def factor(self, exponent: Fraction) -> float:
        """m ** -exponent."""
        return float(self.multiplier ** -float(exponent))

    def _rescale_init(self) -> None:
        with torch.no_grad():
            for name, param in self.model.named_parameters():
                measured = self.trace.init[name]
                if measured is not None:
                    param.mul_(self.factor(self.exponents[name].init - measured))

    def _output_scale(self) -> float:
        scale = 1.0
        for index, exponent in self.derivation.multipliers.items():
            use = self.trace.uses[index]
            if not use.at_output:
                raise ValueError(f"autop: the use of {use.param} by {use.op} needs a multiplier m^-{exponent}, but "
                                 "its result is not the model's output (only an output multiplier is supported)")
            scale *= self.factor(exponent)
        return scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        return out * self.output_scale if self.output_scale != 1.0 else out

    def parameter_groups(self) -> list[dict[str, Any]]:
        """One group per learning-rate exponent: lr_scale m ** -c, weight_decay_scale m ** c
        ("standard": one group with scale 1)."""
        if self.rule == "standard":
            return [{"params": list(self.model.parameters()), "lr_scale": 1.0, "name": "standard"}]
        groups: dict[Fraction, list[nn.Parameter]] = {}
        for name, param in self.model.named_parameters():
            groups.setdefault(self.exponents[name].lr, []).append(param)
        return [{"params": params, "lr_scale": self.factor(c), "weight_decay_scale": self.factor(-c),
                 "name": f"lr*m^-{c}"} for c, params in sorted(groups.items())]
