"""A precision constraint on layers: the weights (and biases) of chosen layers of ANY model are
held at a reduced numerical precision, in training and at test.

Seed paper: Layer Precision Reduction (LPR) for autoencoder anomaly detection (NeurIPS 2026; see
specs/lpr_anomaly/README.md): rounding the parameters of an autoencoder's layers limits its
capacity, so it reconstructs the dominant manifold but not rare or collective anomalies. The
constraint itself is model-agnostic, so it lives here, as a wrapper any model node can be put in:

    model:
      type: precision_reduced
      decimals: 1                 # or bits: 4
      layers: [0, 2]              # null: every layer
      model: {type: mlp, in_features: 20, hidden: [64, 8, 64], out_features: 20}

The rule (`reduce_precision`):

- A **layer** is a submodule that directly holds a parameter named `weight` with two or more
  dimensions (Linear, Conv, Embedding; not the 1-D affine weights of norm layers), numbered from 0
  in `named_modules()` order (input side first for sequential models). `layers` picks some by
  index; null picks all of them.
- **decimals: d** rounds each entry to d decimal places, q(w) = round(w * 10^d) / 10^d (entries
  with |w| < 0.5 * 10^-d become 0). **bits: b** quantizes each tensor uniformly and symmetrically
  to the 2^(b-1) - 1 positive levels, their negatives and 0: q(w) = round(w / s) * s with
  s = max|w| / (2^(b-1) - 1), the scale taken from the tensor itself (no gradient through it).
- `biases: true` constrains the layer's `bias` the same way (the paper rounds weights and biases).
- Training keeps full-precision latent parameters and uses q(w) in the forward pass; the gradient
  passes q as the identity (straight-through estimator), so the latent weights keep learning.
  `when: eval_only` uses full precision while the model is in training mode and q(w) in eval mode
  (post-training rounding: the ablation that asks whether training under the constraint matters).

Implemented with `torch.nn.utils.parametrize`, so the constrained tensors are the layers' own
`weight`/`bias` attributes: any code that reads them sees the reduced values, and the state dict
holds the latent ones (`<layer>.parametrizations.weight.original`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
from annotated_types import Ge
from torch import nn
from torch.nn.utils import parametrize

from components.kinds import Model
from components.types import NonNegativeInt

When = Literal["train_and_eval", "eval_only"]


class _Reduction(nn.Module):
    """A parametrization q(w) with a straight-through gradient; the identity when inactive."""

    def __init__(self, when: When) -> None:
        super().__init__()
        if when not in ("train_and_eval", "eval_only"):
            raise ValueError(f"when must be 'train_and_eval' or 'eval_only', got '{when}'")
        self.when = when

    def quantize(self, w: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        if self.when == "eval_only" and self.training:
            return w
        return w + (self.quantize(w) - w).detach()


class RoundToDecimals(_Reduction):
    """q(w) = round(w * 10^decimals) / 10^decimals (round half to even, as torch.round)."""

    def __init__(self, decimals: int, when: When = "train_and_eval") -> None:
        super().__init__(when)
        self.decimals = decimals

    def quantize(self, w: torch.Tensor) -> torch.Tensor:
        return torch.round(w, decimals=self.decimals)

    def extra_repr(self) -> str:
        return f"decimals={self.decimals}, when={self.when}"


class UniformBits(_Reduction):
    """q(w) = round(w / s) * s, s = max|w| / (2^(bits-1) - 1): symmetric, per tensor."""

    def __init__(self, bits: int, when: When = "train_and_eval") -> None:
        super().__init__(when)
        if bits < 2:
            raise ValueError(f"bits must be >= 2 (1 bit leaves no nonzero level), got {bits}")
        self.bits, self.levels = bits, 2 ** (bits - 1) - 1

    def quantize(self, w: torch.Tensor) -> torch.Tensor:
        scale = w.detach().abs().max() / self.levels
        if scale == 0:
            return w
        return torch.round(w / scale) * scale

    def extra_repr(self) -> str:
        return f"bits={self.bits}, when={self.when}"


def constrainable_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The model's layers in the module docstring's sense, as (name, module), in order."""
    found = []
    for name, module in model.named_modules():
        weight = module._parameters.get("weight")
        if weight is not None and weight.ndim >= 2:
            found.append((name, module))
    return found


def select_layers(layers: list[tuple[str, nn.Module]], indices: list[int] | None) -> list[tuple[str, nn.Module]]:
    """The layers at `indices` (None: all), each once, in model order."""
    if indices is None:
        return list(layers)
    n = len(layers)
    bad = [i for i in indices if not 0 <= i < n]
    if bad:
        names = ", ".join(f"{i}: {name or '(root)'}" for i, (name, _) in enumerate(layers))
        raise ValueError(f"layers {bad} out of range: the model has {n} layers ({names})")
    chosen = sorted(set(indices))
    return [layers[i] for i in chosen]


def reduce_precision(
    model: nn.Module,
    decimals: int | None = None,
    bits: int | None = None,
    layers: list[int] | None = None,
    biases: bool = True,
    when: When = "train_and_eval",
) -> list[str]:
    """Constrain the chosen layers of `model` in place (module docstring); returns the names of
    the constrained tensors (`net.0.weight`, `net.0.bias`, ...). Exactly one of `decimals`, `bits`."""
    if (decimals is None) == (bits is None):
        raise ValueError(f"give exactly one of decimals and bits, got decimals={decimals}, bits={bits}")
    if decimals is not None and decimals < 0:
        raise ValueError(f"decimals must be >= 0, got {decimals}")
    found = constrainable_layers(model)
    if not found:
        raise ValueError(f"{type(model).__name__} has no layer with a weight matrix to constrain")
    names = []
    for name, module in select_layers(found, layers):
        for tensor in ("weight", "bias") if biases else ("weight",):
            if module._parameters.get(tensor) is None:
                continue
            reduction = RoundToDecimals(decimals, when) if decimals is not None else UniformBits(bits, when)
            parametrize.register_parametrization(module, tensor, reduction)
            names.append(f"{name}.{tensor}" if name else tensor)
    return names


class PrecisionReduced(nn.Module):
    """Any model with the weights (and biases) of chosen layers held at reduced precision.

    Args:
        model: The model to constrain (any model node).
        decimals: Round to this many decimal places (LPR's precision); exclusive with `bits`.
        bits: Quantize uniformly to this many bits per tensor (>= 2); exclusive with `decimals`.
        layers: Indices of the layers to constrain (module docstring: layers with a weight matrix,
            in model order, from 0); null: every layer.
        biases: Constrain the layers' biases too.
        when: train_and_eval (train under the constraint, the method) or eval_only (post-training
            rounding, an ablation).

    Attributes:
        reduced: Names of the constrained tensors, relative to `model`.
    """

    def __init__(
        self,
        model: Model,
        decimals: NonNegativeInt | None = None,
        bits: Annotated[int, Ge(2)] | None = None,
        layers: list[NonNegativeInt] | None = None,
        biases: bool = True,
        when: When = "train_and_eval",
    ) -> None:
        super().__init__()
        self.model = model
        self.reduced = reduce_precision(model, decimals=decimals, bits=bits, layers=layers, biases=biases, when=when)
        for size in ("in_features", "out_features"):
            if hasattr(model, size):
                setattr(self, size, getattr(model, size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)
