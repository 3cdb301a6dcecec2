"""Tracing a model's forward pass into the primitive uses of its parameters (autop's input).

Seed paper: "automatic parameterization" (AutoP, NeurIPS 2026; specs/autop/README.md): scaling
rules are read off the traced program, one constraint per primitive instruction. Here the program
is any nn.Module's forward pass, traced with a `torch.overrides.TorchFunctionMode`, so every torch
function a module calls is seen, inside custom modules too, without the model's cooperation.

The rule (`trace_uses`): each call that receives a parameter, directly or through transposes
(`.T`, `.mT`, `.t()`, `.transpose`, `.permute`) and casts (`.to`, `.float`, ...), is one **use** of that parameter, with the
parameter's dimensions the call **contracts** (sums over) and **indexes** (selects from):

- `linear(x, W, b)`: W's in-dimension (dim 1) is contracted; b is elementwise;
- `matmul`/`@`/`mm`/`bmm`: a parameter on the right has its dim -2 contracted, on the left dim -1;
- `conv1d/2d/3d(x, W, b)`: W's dims 1.. (in-channels per group and the kernel) are contracted;
- `einsum("...->...", ...)` (explicit output, no ellipsis in the parameter's letters): the
  parameter's letters the output drops;
- `embedding(ids, W)`: W's dim 0 (rows) is indexed, nothing contracted;
- elementwise functions (`add`, `mul`, norms' affine `weight`/`bias`, ...): nothing contracted;
  but an elementwise result with the parameter's own shape (`W * mask`, `W + A @ B`) is followed
  like a view, so the op that then consumes it is the use;
- any other function: the use is recorded as `op='unsupported:<name>'` and the derivation refuses it.

A use is at the **output** when the call's result is the tensor the model returns.

Widths (`compare_widths`): the same model built at two widths (`base` and `model`, same parameter
names); each parameter dimension's exponent is log(size ratio) / log(m), with the width multiplier
m the largest size ratio of any parameter dimension; the init exponent is read from the measured
standard deviations the same way (rounded to the nearest 1/2, the grid every standard init is on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

CONTRACTING = {"linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "conv1d", "conv2d", "conv3d", "embedding"}
ELEMENTWISE = {
    "add", "__add__", "__radd__", "sub", "__sub__", "__rsub__", "mul", "__mul__", "__rmul__", "div", "__truediv__",
    "layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "prelu", "addcmul", "where", "exp",
}
VIEWS = {"t", "transpose", "permute", "T", "mT"}
SAME = {"to", "contiguous", "float", "double", "half", "bfloat16", "type_as", "clone"}  # views that keep the dims


@dataclass(frozen=True)
class Use:
    """One use of a parameter by a primitive of the traced forward pass.

    Attributes:
        param: The parameter's name in `model.named_parameters()`.
        op: The torch function ("linear", "embedding", "add", ...; "unsupported:<name>" otherwise).
        contracted: The parameter's dimensions the op sums over.
        indexed: The parameter's dimensions the op selects from (embedding rows).
        order: Position of the call in the trace (0 = first).
        at_output: Whether the op's result is the model's output.
    """

    param: str
    op: str
    contracted: tuple[int, ...]
    indexed: tuple[int, ...]
    order: int
    at_output: bool


def _name(func: Callable[..., Any]) -> str:
    if getattr(func, "__name__", "") == "__get__":  # a property such as Tensor.T
        return getattr(getattr(func, "__self__", None), "__name__", "__get__")
    return getattr(func, "__name__", str(func))


class _Recorder(TorchFunctionMode):
    """Follows parameters through views and records each call that receives one."""

    def __init__(self, params: dict[int, str]) -> None:
        super().__init__()
        # id(tensor) -> (parameter name, the parameter dim behind each of the tensor's dims)
        self.views: dict[int, tuple[str, tuple[int, ...]]] = {}
        self.params = params
        self.calls: list[tuple[str, list[tuple[str, tuple[int, ...], int | str]], int, tuple]] = []
        self.keep: list[Any] = []  # results stay alive, so their ids are not reused during the trace

    def view_of(self, tensor: Any) -> tuple[str, tuple[int, ...]] | None:
        if not isinstance(tensor, torch.Tensor):
            return None
        if id(tensor) in self.params:
            return self.params[id(tensor)], tuple(range(tensor.dim()))
        return self.views.get(id(tensor))

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (torch's protocol)
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = _name(func)
        operands = [(i, a) for i, a in enumerate(args)] + list(kwargs.items())
        found = [(pos, view) for pos, a in operands if (view := self.view_of(a)) is not None]
        if not found:
            return out
        if isinstance(out, torch.Tensor) and len(found) == 1 and (
                name in VIEWS | SAME or (name in ELEMENTWISE and _same_shape(out, args, kwargs, found[0][0]))):
            dims = found[0][1][1] if name in ELEMENTWISE else _permuted(name, found[0][1][1], args, kwargs)
            self.views[id(out)] = (found[0][1][0], dims)
            self.keep.append(out)
            return out
        self.keep.append(out)
        self.calls.append((name, [(view[0], view[1], pos) for pos, view in found], id(out), args))
        return out


def _same_shape(out: torch.Tensor, args: tuple, kwargs: dict, pos: int | str) -> bool:
    """Whether an elementwise op's result has its parameter operand's shape: a tensor computed
    from the parameter (a masked or rescaled weight), followed like a view, not a use of it."""
    operand = args[pos] if isinstance(pos, int) else kwargs[pos]
    return out.shape == operand.shape


def _permuted(name: str, dims: tuple[int, ...], args: tuple, kwargs: dict) -> tuple[int, ...]:
    """The parameter dims behind a view's dims after the view op `name`."""
    d = list(dims)
    if name in SAME:
        return dims
    if name in ("t", "T") or (name == "mT" and len(d) == 2):
        return tuple(reversed(d))
    if name == "mT":
        return (*d[:-2], d[-1], d[-2])
    if name == "transpose":
        i, j = (list(args[1:3]) + [kwargs.get("dim0"), kwargs.get("dim1")])[:2]
        d[i], d[j] = d[j], d[i]
        return tuple(d)
    order = args[1:] if len(args) > 2 else (args[1] if len(args) > 1 else kwargs["dims"])
    return tuple(d[k] for k in order)


def _einsum_contracted(equation: str, pos: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """The parameter dims behind the `pos`-th einsum operand's letters that the output drops."""
    inputs, _, output = equation.replace(" ", "").partition("->")
    letters = inputs.split(",")[pos]
    return tuple(dims[i] for i, letter in enumerate(letters) if letter not in output)


def _explicit(equation: object, pos: int) -> bool:
    """An einsum equation with an output and no ellipsis in operand `pos`'s letters."""
    if not isinstance(equation, str) or "->" not in equation:
        return False
    operands = equation.partition("->")[0].split(",")
    return 0 <= pos < len(operands) and "..." not in operands[pos]


def _use(name: str, dims: tuple[int, ...], pos: int | str, args: tuple) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    """(op, contracted parameter dims, indexed parameter dims) of one operand of a call."""
    if name == "einsum" and isinstance(pos, int) and _explicit(args[0], pos - 1):
        return name, _einsum_contracted(args[0], pos - 1, dims), ()
    if name == "linear" and pos in (1, "weight"):
        return name, (dims[1],), ()
    if name in ("matmul", "__matmul__", "mm", "bmm", "__rmatmul__"):
        right = (pos == 1) != (name == "__rmatmul__")
        return name, ((dims[-2],) if right and len(dims) > 1 else (dims[-1],)), ()
    if name.startswith("conv") and pos in (1, "weight"):
        return name, tuple(dims[1:]), ()
    if name == "embedding" and pos in (1, "weight"):
        return name, (), (dims[0],)
    if name in ELEMENTWISE or (name in CONTRACTING and pos in (2, "bias")):
        return name, (), ()
    return f"unsupported:{name}", (), ()


def trace_uses(model: nn.Module, example: torch.Tensor) -> list[Use]:
    """Every use of a parameter in `model(example)`, in call order (module docstring)."""
    params = {id(p): n for n, p in model.named_parameters()}
    recorder = _Recorder(params)
    with torch.no_grad(), recorder:
        output = model(example)
    uses = []
    for order, (name, operands, out_id, args) in enumerate(recorder.calls):
        for param, dims, pos in operands:
            op, contracted, indexed = _use(name, dims, pos, args)
            uses.append(Use(param, op, contracted, indexed, order, out_id == id(output)))
    return uses


@dataclass(frozen=True)
class WidthTrace:
    """A model traced at two widths: the facts the derivation (components.scaling.derive) reads.

    Attributes:
        multiplier: m, the largest size ratio model / base of any parameter dimension (1: same widths).
        dims: parameter name -> each dimension's width exponent (size ratio = m ** exponent).
        init: parameter name -> its measured init std exponent in m (std ratio = m ** -init);
            None for a parameter initialized to a constant (std 0).
        uses: The model's parameter uses (trace_uses).
    """

    multiplier: float
    dims: dict[str, tuple[Fraction, ...]]
    init: dict[str, Fraction | None]
    uses: list[Use]


def _exponent(ratio: float, multiplier: float, grid: int) -> Fraction:
    if multiplier == 1.0:
        return Fraction(0)
    return Fraction(round(math.log(ratio) / math.log(multiplier) * grid), grid)


def compare_widths(model: nn.Module, base: nn.Module, example: torch.Tensor) -> WidthTrace:
    """Trace `model` and read each parameter's dimension and init exponents against `base`, the
    same model at another width (module docstring). A ValueError when the parameter names or
    numbers of dimensions differ."""
    mine, theirs = dict(model.named_parameters()), dict(base.named_parameters())
    if mine.keys() != theirs.keys():
        odd = sorted(set(mine) ^ set(theirs))
        raise ValueError(f"model and base must have the same parameters (the same model at two widths); "
                         f"only in one of them: {odd[:5]}")
    ratios = {n: [a / b for a, b in zip(p.shape, theirs[n].shape)] for n, p in mine.items()}
    if any(len(mine[n].shape) != len(theirs[n].shape) for n in mine):
        raise ValueError("model and base parameters differ in their number of dimensions")
    multiplier = max([1.0, *(r for rs in ratios.values() for r in rs)])
    dims = {n: tuple(_exponent(r, multiplier, 12) for r in rs) for n, rs in ratios.items()}
    init = {}
    for n, p in mine.items():
        std, base_std = p.detach().float().std().item() if p.numel() > 1 else 0.0, \
            theirs[n].detach().float().std().item() if theirs[n].numel() > 1 else 0.0
        init[n] = None if std == 0 or base_std == 0 else -_exponent(std / base_std, multiplier, 2)
    return WidthTrace(multiplier, dims, init, trace_uses(model, example))
