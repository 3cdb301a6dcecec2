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
  `quantize_uniform` is the same rule in general form, which other papers reuse (scalebits'
  mixed-precision blocks, components/compression/): groups of `group_size` consecutive entries
  along the last dimension with a scale each (None: the whole tensor is one group), a bit width
  per group (an int, or a tensor with one width per group), and an asymmetric variant (min-max
  with an integer zero point: 2^b levels, 0 exactly representable), the usual form of low-bit
  weight-only LLM quantization (RTN/GPTQ with groups).
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


def quantize_uniform(
    w: torch.Tensor,
    bits: int | torch.Tensor,
    symmetric: bool = True,
    group_size: int | None = None,
) -> torch.Tensor:
    """Uniform quantization of `w` (module docstring), returned in w's shape and dtype.

    Args:
        w: Any tensor; groups run along its last dimension.
        bits: Bit width, an int, or a tensor of widths, one per group, of shape
            w.shape[:-1] + (w.shape[-1] // group_size,) (with group_size None: a 0-d tensor).
        symmetric: True: round(w / s) * s, s = max|w| / (2^(bits-1) - 1) per group (bits >= 2);
            False: min-max with an integer zero point, s = (max - min) / (2^bits - 1),
            z = round(-min / s), q = (clamp(round(w / s) + z, 0, 2^bits - 1) - z) * s (bits >= 1).
        group_size: Entries per group along the last dimension (must divide it); None: one group.

    A group whose scale is 0 (all entries equal to 0, or equal, when asymmetric) is returned as is.
    The scale is computed from w.detach() (no gradient through it).
    """
    if group_size is None:
        groups = w.reshape(1, -1)
    else:
        if w.ndim == 0 or w.shape[-1] % group_size:
            raise ValueError(f"group_size {group_size} must divide the last dimension of {tuple(w.shape)}")
        groups = w.reshape(*w.shape[:-1], w.shape[-1] // group_size, group_size)
    b = torch.as_tensor(bits, device=w.device)
    if b.ndim:
        if tuple(b.shape) != tuple(groups.shape[:-1]):
            raise ValueError(f"bits has shape {tuple(b.shape)}, expected one width per group {tuple(groups.shape[:-1])}")
        b = b.unsqueeze(-1)
    low = 2 if symmetric else 1
    if int(b.min()) < low:
        raise ValueError(f"bits must be >= {low} ({'1 bit leaves no nonzero level' if symmetric else 'one level'}), "
                         f"got {int(b.min())}")
    ref = groups.detach()
    if symmetric:
        levels = (2 ** (b - 1) - 1).to(w.dtype)
        scale = ref.abs().amax(dim=-1, keepdim=True) / levels
        q = torch.round(groups / scale) * scale
    else:
        levels = (2**b - 1).to(w.dtype)
        lo, hi = ref.amin(dim=-1, keepdim=True), ref.amax(dim=-1, keepdim=True)
        scale = (hi - lo) / levels
        zero = torch.round(-lo / scale)
        q = (torch.clamp(torch.round(groups / scale) + zero, torch.zeros_like(levels), levels) - zero) * scale
    return torch.where(scale == 0, groups, q).reshape(w.shape)


class UniformBits(_Reduction):
    """q(w) = round(w / s) * s, s = max|w| / (2^(bits-1) - 1): symmetric, per tensor (the
    defaults); `group_size` and `symmetric=False` as in `quantize_uniform`."""

    def __init__(self, bits: int, when: When = "train_and_eval", symmetric: bool = True,
                 group_size: int | None = None) -> None:
        super().__init__(when)
        if bits < 2:
            raise ValueError(f"bits must be >= 2 (1 bit leaves no nonzero level), got {bits}")
        self.bits, self.levels = bits, 2 ** (bits - 1) - 1
        self.symmetric, self.group_size = symmetric, group_size

    def quantize(self, w: torch.Tensor) -> torch.Tensor:
        return quantize_uniform(w, self.bits, self.symmetric, self.group_size)

    def extra_repr(self) -> str:
        extra = "" if self.symmetric else ", symmetric=False"
        extra += f", group_size={self.group_size}" if self.group_size else ""
        return f"bits={self.bits}, when={self.when}{extra}"


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
