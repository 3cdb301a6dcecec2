"""Function-preserving ReLU rescalings and their canonical representative.

Seed paper: "Scale-Invariant Empirical-Bayes Laplace Approximation for ReLU Networks"
(gamma_laplace, NeurIPS 2026; see specs/gamma_laplace/README.md). ReLU is positively homogeneous,
relu(g * z) = g * relu(z) for g > 0, so multiplying a hidden unit's incoming weights and bias by
g and its outgoing weights by 1/g leaves the network's function unchanged. The networks reachable
this way form the unit's scale orbit; `canonical_gammas` and `gamma_canonicalize` pick one point
per orbit, for each member gamma in [0, 1] of a family of canonicalizations.

Supported networks: `components.models.mlp.MLP` with ReLU activations (dropout is fine: it is the
identity in eval mode and commutes with a positive scale in train mode) and
`components.models.cnn.SmallCNN` (per output channel: ReLU and max-pool are positively
homogeneous, the global average pool is linear). A Linear weight (out, in) and a Conv2d weight
(out, in, k, k) both hold the producing unit on dim 0 and the consuming unit on dim 1, so one
code path serves both.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
from torch import nn

_PASSTHROUGH = (nn.ReLU, nn.Dropout, nn.MaxPool2d)


def scalable_layers(model: nn.Module) -> list[nn.Module]:
    """The weight layers of `model`, input side first; each consecutive pair shares one group of
    rescalable hidden units (the first's outputs, the second's inputs).

    Raises:
        ValueError: `model` is not a ReLU MLP or a SmallCNN, or holds a layer that breaks the
            symmetry (another activation, a normalization layer).
    """
    from components.models.cnn import SmallCNN
    from components.models.mlp import MLP

    if isinstance(model, MLP):
        modules = list(model.net)
    elif isinstance(model, SmallCNN):
        modules = [*model.features, *model.head]
    else:
        raise ValueError(
            f"ReLU rescaling supports the models 'mlp' (activation relu) and 'small_cnn', "
            f"got {type(model).__name__}"
        )
    layers = []
    for module in modules:
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            if module.bias is None:
                raise ValueError(f"ReLU rescaling expects layers with a bias, got {module}")
            layers.append(module)
        elif not isinstance(module, _PASSTHROUGH):
            raise ValueError(
                f"ReLU rescaling needs ReLU activations between the layers; "
                f"{type(module).__name__} is not positively homogeneous"
            )
    return layers


def hidden_widths(model: nn.Module) -> list[int]:
    """Number of rescalable units in each hidden layer, input side first."""
    return [layer.weight.shape[0] for layer in scalable_layers(model)[:-1]]


def _scale_unit_group(producer: nn.Module, consumer: nn.Module, gamma: torch.Tensor) -> None:
    shape = (-1,) + (1,) * (producer.weight.ndim - 1)
    producer.weight.mul_(gamma.view(shape))
    producer.bias.mul_(gamma)
    consumer.weight.div_(gamma.view((1, -1) + (1,) * (consumer.weight.ndim - 2)))


@torch.no_grad()
def relu_rescale(model: nn.Module, gammas: Sequence[torch.Tensor]) -> nn.Module:
    """A rescaled copy of `model` that computes the same function (the original is untouched).

    Args:
        model: A ReLU MLP or SmallCNN.
        gammas: One positive tensor per hidden layer, shaped like that layer's units
            (`hidden_widths(model)`); unit i of hidden layer l gets incoming weights and bias
            times gammas[l][i] and outgoing weights divided by it.
    """
    rescaled = copy.deepcopy(model)
    layers = scalable_layers(rescaled)
    widths = [layer.weight.shape[0] for layer in layers[:-1]]
    if len(gammas) != len(widths):
        raise ValueError(f"gammas must hold one tensor per hidden layer ({len(widths)}), got {len(gammas)}")
    for index, (gamma, width) in enumerate(zip(gammas, widths)):
        gamma = torch.as_tensor(gamma, dtype=layers[index].weight.dtype, device=layers[index].weight.device)
        if gamma.shape != (width,):
            raise ValueError(f"gammas[{index}] must have shape ({width},), got {tuple(gamma.shape)}")
        if not bool((gamma > 0).all()) or not bool(torch.isfinite(gamma).all()):
            raise ValueError(f"gammas[{index}] must be finite and > 0, got min {float(gamma.min())}")
        _scale_unit_group(layers[index], layers[index + 1], gamma)
    return rescaled


def random_gammas(model: nn.Module, generator: torch.Generator, log_std: float = 1.0) -> list[torch.Tensor]:
    """Per-unit scales gamma = exp(log_std * N(0, 1)) for every hidden layer of `model`."""
    if log_std < 0:
        raise ValueError(f"log_std must be >= 0, got {log_std}")
    dtype = next(model.parameters()).dtype
    return [torch.exp(log_std * torch.randn(w, generator=generator, dtype=torch.float64)).to(dtype)
            for w in hidden_widths(model)]


def _unit_norms(producer: nn.Module, consumer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """|in| (incoming weights and bias) and |out| (outgoing weights) of each unit of one group."""
    incoming = (producer.weight.flatten(1).pow(2).sum(1) + producer.bias.pow(2)).sqrt()
    outgoing = consumer.weight.transpose(0, 1).flatten(1).pow(2).sum(1).sqrt()
    return incoming, outgoing


@torch.no_grad()
def canonical_gammas(
    model: nn.Module, gamma: float = 0.5, tol: float | None = None, max_sweeps: int = 10_000
) -> list[torch.Tensor]:
    """Per-unit scales that move `model` to the gamma-canonical representative of its ReLU scale
    orbit: `relu_rescale(model, canonical_gammas(model, gamma))` is that representative.

    The family (our definition; the abstract names a family gamma in [0, 1] but not its formula,
    see specs/gamma_laplace/README.md): a unit's orbit invariant is the product |in| |out| (|in|:
    incoming weights and bias, |out|: outgoing weights; a scale g maps them to g |in|, |out| / g),
    and the gamma-canonical point gives every hidden unit

        |in| = (|in| |out|)^gamma,  |out| = (|in| |out|)^(1 - gamma),
        i.e. (1 - gamma) log |in| = gamma log |out|.

    gamma = 0 normalizes every unit's incoming weights (|in| = 1), gamma = 1 its outgoing weights,
    gamma = 1/2 balances them (|in| = |out|: the minimum-norm point of the orbit). The paper's
    family is gamma in [0, 1]; the same equations pick one point per orbit for any real gamma, and
    gamma_laplace's claims use a little beyond [0, 1] on both sides (-0.3 to 1.3) to see whether
    the marginal likelihood's best gamma lies inside the family or is pushed to its end. With one
    hidden layer the scale is closed-form per unit, g = |out|^gamma / |in|^(1 - gamma); with more,
    a unit's outgoing weights are the next layer's incoming ones, so we sweep that update over
    the hidden layers, alternately input-first and output-first (gamma = 0 settles in one forward
    sweep, gamma = 1 in one backward sweep), until every update is below `tol` in log scale. In the
    log-scales, the Jacobian of these equations is an irreducibly diagonally dominant M-matrix
    (each unit's own scale enters with weight 1, its neighbours' with weights summing to <= 1), so
    the fixed point is locally unique; tests/components/bayes/ check that rescaled copies of a
    network all reach the same parameters, for gamma across [0, 1]. Outside [0, 1] one neighbour
    enters with a negative weight and the weights' magnitudes sum to |gamma| + |1 - gamma| > 1:
    the sweep still converges while that coupling is weak enough (with two hidden layers the
    linearized round trip contracts by at most |gamma (1 - gamma)|, < 1 for gamma in
    (-0.61, 1.61); tests check gamma = -0.3 and 1.3 with two and three hidden layers) and raises
    RuntimeError after `max_sweeps` otherwise.

    A unit whose incoming or outgoing weights are all zero keeps scale 1 (its orbit has no
    canonical point; it contributes nothing to the function either way).

    Args:
        model: A ReLU MLP or SmallCNN.
        gamma: The member of the family: the paper's in [0, 1]; any finite value continues it.
        tol: Largest |log g| of a sweep at which to stop; default 100 machine epsilons of the
            parameter dtype.
        max_sweeps: Give up (RuntimeError) after this many sweeps.
    """
    if not math.isfinite(gamma):
        raise ValueError(f"gamma must be a finite number, got {gamma}")
    work = copy.deepcopy(model)
    layers = scalable_layers(work)
    dtype = layers[0].weight.dtype
    tol = 100 * torch.finfo(dtype).eps if tol is None else tol
    if tol <= 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    groups = list(zip(layers[:-1], layers[1:]))
    total = [torch.ones(producer.weight.shape[0], dtype=dtype, device=producer.weight.device)
             for producer, _ in groups]
    for sweep in range(max_sweeps):
        largest = 0.0
        order = range(len(groups)) if sweep % 2 == 0 else reversed(range(len(groups)))
        for index in order:
            producer, consumer = groups[index]
            incoming, outgoing = _unit_norms(producer, consumer)
            live = (incoming > 0) & (outgoing > 0)
            log_g = gamma * outgoing.where(live, 1.0).log() - (1 - gamma) * incoming.where(live, 1.0).log()
            scale = torch.where(live, log_g.exp(), 1.0)
            _scale_unit_group(producer, consumer, scale)
            total[index] *= scale
            largest = max(largest, float(log_g.where(live, 0.0).abs().max()))
        if largest < tol:
            return total
    raise RuntimeError(f"canonical_gammas did not converge to tol {tol} in {max_sweeps} sweeps")


def gamma_canonicalize(
    model: nn.Module, gamma: float = 0.5, tol: float | None = None, max_sweeps: int = 10_000
) -> nn.Module:
    """The gamma-canonical representative of `model`'s ReLU scale orbit (a copy; see
    `canonical_gammas`). The default gamma = 1/2 is norm balancing: it minimizes the squared
    parameter norm over the orbit. Canonicalizing twice changes nothing."""
    return relu_rescale(model, canonical_gammas(model, gamma, tol, max_sweeps))


@torch.no_grad()
def parameter_scales(model: nn.Module, gammas: Sequence[torch.Tensor]) -> torch.Tensor:
    """The factor by which `relu_rescale(model, gammas)` multiplies each parameter, flattened in
    `named_parameters` order: the diagonal of the (linear) map from `model`'s coordinates to the
    rescaled ones. A weight from unit k to unit i gets gamma_i / gamma_k (1 for inputs and
    outputs), a bias gamma_i."""
    ones = copy.deepcopy(model)
    for param in ones.parameters():
        param.fill_(1.0)
    return torch.cat([p.reshape(-1) for p in relu_rescale(ones, gammas).parameters()])
