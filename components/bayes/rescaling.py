"""Function-preserving ReLU rescalings and their canonical representative.

Seed paper: "Scale-Invariant Empirical-Bayes Laplace Approximation for ReLU Networks"
(gamma_laplace, NeurIPS 2026; see specs/gamma_laplace/README.md). ReLU is positively homogeneous,
relu(g * z) = g * relu(z) for g > 0, so multiplying a hidden unit's incoming weights and bias by
g and its outgoing weights by 1/g leaves the network's function unchanged. The networks reachable
this way form the unit's scale orbit; `gamma_canonicalize` picks one point per orbit.

Supported networks: `components.models.mlp.MLP` with ReLU activations (dropout is fine: it is the
identity in eval mode and commutes with a positive scale in train mode) and
`components.models.cnn.SmallCNN` (per output channel: ReLU and max-pool are positively
homogeneous, the global average pool is linear). A Linear weight (out, in) and a Conv2d weight
(out, in, k, k) both hold the producing unit on dim 0 and the consuming unit on dim 1, so one
code path serves both.
"""

from __future__ import annotations

import copy
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


@torch.no_grad()
def gamma_canonicalize(model: nn.Module, tol: float | None = None, max_sweeps: int = 10_000) -> nn.Module:
    """The norm-balanced representative of `model`'s ReLU scale orbit (a copy).

    Minimizes the squared parameter norm over the orbit. The objective is convex in the log-scales
    and, for a fixed hidden layer, separable over its units with the closed-form minimizer
    gamma = (|out|^2 / |in|^2)^(1/4) (|in|: incoming weights and bias, |out|: outgoing weights);
    we sweep the hidden layers until every update is below `tol` in log scale. At the fixed point
    every unit has |in| = |out|, the gamma = 1/2 member of the paper's canonicalization family
    (specs/gamma_laplace/README.md). Every rescaled copy of a network maps to the same parameters,
    and canonicalizing twice changes nothing.

    A unit whose incoming or outgoing weights are all zero is left as it is (its orbit has no
    balanced point; it contributes nothing to the function either way).

    Args:
        model: A ReLU MLP or SmallCNN.
        tol: Largest |log gamma| of a sweep at which to stop; default 100 machine epsilons of the
            parameter dtype.
        max_sweeps: Give up (RuntimeError) after this many sweeps.
    """
    canonical = copy.deepcopy(model)
    layers = scalable_layers(canonical)
    dtype = layers[0].weight.dtype
    tol = 100 * torch.finfo(dtype).eps if tol is None else tol
    if tol <= 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    for _ in range(max_sweeps):
        largest = 0.0
        for producer, consumer in zip(layers[:-1], layers[1:]):
            incoming = producer.weight.flatten(1).pow(2).sum(1) + producer.bias.pow(2)
            outgoing = consumer.weight.transpose(0, 1).flatten(1).pow(2).sum(1)
            live = (incoming > 0) & (outgoing > 0)
            gamma = torch.where(live, (outgoing / incoming.where(live, 1.0)).pow(0.25), 1.0)
            _scale_unit_group(producer, consumer, gamma)
            largest = max(largest, float(gamma.log().abs().max()))
        if largest < tol:
            return canonical
    raise RuntimeError(f"gamma_canonicalize did not converge to tol {tol} in {max_sweeps} sweeps")
