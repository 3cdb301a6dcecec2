"""Width parametrizations: how init scale, learning rate and output multiplier change with width.

A parametrization sorts a model's parameters by how many of their dimensions grow with the width
(found as mup's `set_base_shapes` does: by comparing shapes with the same model built at twice the
width, on the meta device, so nothing is allocated):

- `hidden`: two or more growing dimensions (attention, MLP and SSM in/out projections);
- `vector`: at most one growing dimension (biases, norm gains, embeddings and the tied readout,
  depthwise conv taps, an SSM's per-head A, dt bias and D);

and gives each kind an init multiplier (on the model's own init std), an LR multiplier (on the
spec's `optimizer.lr`, through the model's `parameter_groups()`: components/tasks/supervised.py
`scaled_groups`), and the model a multiplier on its output logits.

`sp` (standard parametrization): every multiplier 1; the model as its own init makes it, one LR.
`mup` (muP for Adam, Yang et al. 2022, "Tensor Programs V", Table 3, multiplier form as in the
`mup` package's MuReadout / MuAdam), with m = d_model / base_width:

    hidden init std x m^-1/2, hidden Adam LR x 1/m, output logits x 1/m,
    vector init and LR unchanged.

The readout keeps its LR: the 1/m output multiplier already shrinks its effect on the logits, and
scaling its LR by 1/m as well would shrink it twice (NOTES.md's pitfall: the optimum then moves the
other way). At width == base_width `mup` is `sp` exactly.

The contract with a model (`causal_lm`): it has `d_model` and `twin(d_model)` (the same model at
another width on the meta device), calls `apply(model)` once its own init is done and multiplies
its logits by what that returns, and its `parameter_groups()` returns `groups(model)`.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn

from components.types import PositiveInt

Role = Literal["hidden", "vector"]


def parameter_roles(model: nn.Module, twin: nn.Module) -> dict[str, Role]:
    """name -> 'hidden' when two or more of its dimensions differ from the twin's (the same model at
    another width), else 'vector'. Parameters shared under two names (tied weights) appear once."""
    twin_shapes = {name: p.shape for name, p in twin.named_parameters()}
    roles: dict[str, Role] = {}
    for name, param in model.named_parameters():
        if name not in twin_shapes:
            raise ValueError(f"parameter {name!r} has no counterpart in the model built at another width")
        growing = sum(a != b for a, b in zip(param.shape, twin_shapes[name]))
        roles[name] = "hidden" if growing >= 2 else "vector"
    return roles


class Parametrization:
    """Base of the width parametrizations: the rules are `init_multiplier`, `lr_multiplier` and
    `output_multiplier` as functions of the role and the width ratio m = d_model / base_width.

    Args:
        base_width: The width at which every multiplier is 1 (the tuned proxy's width).
    """

    name = "parametrization"

    def __init__(self, base_width: PositiveInt = 32) -> None:
        self.base_width = base_width

    def ratio(self, model: Any) -> float:
        """m = model.d_model / base_width."""
        return model.d_model / self.base_width

    def init_multiplier(self, role: Role, ratio: float) -> float:
        raise NotImplementedError

    def lr_multiplier(self, role: Role, ratio: float) -> float:
        raise NotImplementedError

    def output_multiplier(self, ratio: float) -> float:
        raise NotImplementedError

    def roles(self, model: Any) -> dict[str, Role]:
        """Each parameter's role, from the model and its twin at twice the width."""
        return parameter_roles(model, model.twin(2 * model.d_model))

    def apply(self, model: Any) -> float:
        """Rescale the model's initialized parameters by their init multipliers (in place); return
        the multiplier the model puts on its logits."""
        ratio = self.ratio(model)
        roles = self.roles(model)
        with torch.no_grad():
            for name, param in model.named_parameters():
                scale = self.init_multiplier(roles[name], ratio)
                if scale != 1.0:
                    param.mul_(scale)
        return self.output_multiplier(ratio)

    def groups(self, model: Any) -> list[dict[str, Any]]:
        """The model's trainable parameters in one group per role (in parameter order within each),
        each with its `lr_scale` (the `parameter_groups()` word)."""
        ratio = self.ratio(model)
        roles = self.roles(model)
        params: dict[Role, list[nn.Parameter]] = {"vector": [], "hidden": []}
        for name, param in model.named_parameters():
            if param.requires_grad:
                params[roles[name]].append(param)
        return [{"params": ps, "lr_scale": self.lr_multiplier(role, ratio), "name": f"{self.name}.{role}"}
                for role, ps in params.items() if ps]


class StandardParametrization(Parametrization):
    """SP: the model's own init, one learning rate for every parameter, no output multiplier (module
    docstring); the baseline whose best learning rate moves with width.

    Args:
        base_width: Unused by the rules (every multiplier is 1); kept so sp and mup specs differ
            only in `type`.
    """

    name = "sp"

    def init_multiplier(self, role: Role, ratio: float) -> float:
        return 1.0

    def lr_multiplier(self, role: Role, ratio: float) -> float:
        return 1.0

    def output_multiplier(self, ratio: float) -> float:
        return 1.0


class MuP(Parametrization):
    """muP for Adam(W), multiplier form (module docstring): with m = d_model / base_width, hidden
    weights start at std x m^-1/2 and learn at lr / m; logits are multiplied by 1 / m; vector-like
    parameters (embeddings and the tied readout included) keep their init and LR.

    Args:
        base_width: The width at which muP equals SP (the proxy model whose LR is tuned).
    """

    name = "mup"

    def init_multiplier(self, role: Role, ratio: float) -> float:
        return ratio ** -0.5 if role == "hidden" else 1.0

    def lr_multiplier(self, role: Role, ratio: float) -> float:
        return 1.0 / ratio if role == "hidden" else 1.0

    def output_multiplier(self, ratio: float) -> float:
        return 1.0 / ratio
