"""PoLAR: polar-decomposed low-rank adapters on a Stiefel manifold, and the landing step that trains them.

`polar_adapter` wraps a model node: every chosen `nn.Linear` (weight W, out x in) gets the update

    W' = W + s U Theta V^T,   U in St(out, r), V in St(in, r), Theta in R^{r x r},  s = alpha / rank,

U and V with orthonormal columns (the "direction" factors of a polar decomposition of the update),
Theta unconstrained (its "magnitude"). PoLAR (Lion et al., 2025) introduces this parameterization
against LoRA's rank collapse: in LoRA's B A the directions and scales are entangled and the update
tends to a few dominant directions; here the directions stay orthonormal by construction and
Theta's singular values are the update's. U and V start as random orthonormal frames (QR of a
Gaussian), Theta at 0, so the adapted model computes what the base did. peft has no PoLAR tuner
(peft 0.21), so the layer is written here, in the manner of `peft_lora`: the base is frozen, the
base weights keep their names (`net.0.weight`) and the adapter's are added on the same module
(`net.0.polar_u`, `net.0.polar_v`, `net.0.polar_theta`), so a base checkpoint loads by name
(`init: {..., strict: false}`).

The Stiefel factors are marked (`param.stiefel = True`); `landing_adam` steps them by the landing
field of Ablin & Peyre (2022) and Gao et al. (2022), the retraction-free Riemannian method PoLAR
uses: X <- X - lr (psi(X) X + lam X (X^T X - I)), psi(X) = skew(G X^T), which moves along the
manifold's tangent directions and pulls back to it, without an SVD or QR per step. Our choice, not
the paper's (which we did not have): G is Adam's preconditioned direction for X, so that one
learning rate serves the Stiefel factors and the unconstrained parameters (Theta, a head) alike.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from components.kinds import Model
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt, ProperFraction

Betas = tuple[ProperFraction, ProperFraction]
HOOK = "_expspec_polar_hook"


def _frame(rows: int, rank: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random (rows, rank) matrix with orthonormal columns: Q of a Gaussian's QR."""
    q, r = torch.linalg.qr(torch.randn(rows, rank, generator=generator, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).float()


def _forward_hook(layer: nn.Linear, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> torch.Tensor:
    x = inputs[0].to(layer.polar_v.dtype)  # a bf16 base, float32 factors: the update in float32
    update = layer.polar_scaling * ((x @ layer.polar_v) @ layer.polar_theta.T) @ layer.polar_u.T
    return output + update.to(output.dtype)


def polar_adapter(
    base: Model,
    rank: PositiveInt = 8,
    alpha: PositiveFloat = 8.0,
    targets: list[str] | None = None,
) -> nn.Module:
    """The base model with a PoLAR adapter s U Theta V^T on each target Linear layer; only adapters train.

    Args:
        base: The model to adapt (any model node); adapted in place and returned. Its own
            parameters are frozen except those outside the targets that a wrapper unfreezes
            (e.g. a new head, `with_head`).
        rank: r, the adapters' rank (at most min(out, in) of every target).
        alpha: Scale numerator: the update is (alpha / rank) U Theta V^T.
        targets: Names of the Linear modules to adapt, matched as peft matches them: a full
            module name, or the end of one after a dot (`q_proj` adapts every layer's q_proj);
            None adapts every nn.Linear of the base.
    """
    layers = dict(base.named_modules())
    linear = [n for n, m in layers.items() if isinstance(m, nn.Linear)]
    if targets is None:
        names = linear
    else:
        names = [n for n in linear if any(n == t or n.endswith("." + t) for t in targets)]
        for target in targets:
            if not any(n == target or n.endswith("." + target) for n in names):
                raise ValueError(f"targets: {target!r} names no nn.Linear of the base; its Linear layers: "
                                 f"{linear[:20]}")
    if not names:
        raise ValueError(f"targets: the base model ({type(base).__name__}) has no nn.Linear layer to adapt")
    for name in names:
        if rank > min(layers[name].weight.shape):
            raise ValueError(f"rank: {rank} > min(out, in) = {min(layers[name].weight.shape)} of {name!r}")
    for param in base.parameters():
        param.requires_grad_(False)
    for name in names:
        layer = layers[name]
        out_features, in_features = layer.weight.shape
        layer.polar_u = nn.Parameter(_frame(out_features, rank))
        layer.polar_v = nn.Parameter(_frame(in_features, rank))
        layer.polar_theta = nn.Parameter(torch.zeros(rank, rank))
        layer.polar_u.stiefel = True
        layer.polar_v.stiefel = True
        layer.polar_scaling = alpha / rank
        setattr(layer, HOOK, layer.register_forward_hook(_forward_hook))
    return base


def polar_layers(model: nn.Module) -> list[nn.Linear]:
    """The PoLAR-adapted layers of a model, in module order."""
    return [m for m in model.modules() if hasattr(m, HOOK)]


def polar_delta_weight(layer: nn.Linear) -> torch.Tensor:
    """The layer's update s U Theta V^T, (out, in)."""
    return layer.polar_scaling * layer.polar_u @ layer.polar_theta @ layer.polar_v.T


def stiefel_distance(x: torch.Tensor) -> float:
    """||X^T X - I||_F: how far the columns of X are from orthonormal."""
    eye = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
    return float(torch.linalg.matrix_norm(x.T @ x - eye))


class LandingAdam(torch.optim.Optimizer):
    """Adam, with the landing step (Ablin & Peyre, 2022) for parameters marked `stiefel`.

    Plain parameters take Adam's step. A parameter X (n, r) marked `param.stiefel = True` (columns
    meant orthonormal, X^T X = I) takes X <- X - lr (psi X + lam X (X^T X - I)), psi = skew(G X^T)
    with G Adam's preconditioned direction for X (bias-corrected first moment over the root of the
    second): the relative-gradient term moves X along the manifold, the second term (the gradient
    of lam/4 ||X^T X - I||^2) lands it back. psi X is computed as (G (X^T X) - X (G^T X)) / 2,
    O(n r^2). With `max_step` the step is shortened to keep ||lr * field|| below it (the landing
    paper's safe step, in a simple form), so a large learning rate cannot throw X off the manifold.

    Args:
        lr: Learning rate, > 0 (one for every parameter).
        betas: Decay rates of Adam's moment averages.
        eps: Adam's denominator term.
        weight_decay: L2 penalty on plain parameters (not on Stiefel ones), >= 0.
        landing: lam, the weight of the pull back to the manifold, > 0.
        max_step: Largest Frobenius norm of one Stiefel step; 0 for no limit.
    """

    def __init__(self, params: Any, lr: PositiveFloat = 1e-3, betas: Betas = (0.9, 0.999),
                 eps: NonNegativeFloat = 1e-8, weight_decay: NonNegativeFloat = 0, landing: PositiveFloat = 1.0,
                 max_step: NonNegativeFloat = 0.5) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, landing=landing,
                                      max_step=max_step))

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                stiefel = getattr(p, "stiefel", False)
                grad = p.grad
                if group["weight_decay"] and not stiefel:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                first = state["exp_avg"] / (1 - beta1 ** state["step"])
                second = state["exp_avg_sq"] / (1 - beta2 ** state["step"])
                direction = first / (second.sqrt() + group["eps"])
                if not stiefel:
                    p.add_(direction, alpha=-group["lr"])
                    continue
                if p.ndim != 2:
                    raise ValueError(f"landing: a stiefel parameter must be a matrix, got shape {tuple(p.shape)}")
                gram = p.T @ p
                relative = 0.5 * (direction @ gram - p @ (direction.T @ p))
                eye = torch.eye(gram.shape[0], dtype=p.dtype, device=p.device)
                field = relative + group["landing"] * p @ (gram - eye)
                update = group["lr"] * field
                norm = float(torch.linalg.matrix_norm(update))
                if group["max_step"] and norm > group["max_step"]:
                    update = update * (group["max_step"] / norm)
                p.sub_(update)
        return loss


def effective_rank(matrix: torch.Tensor) -> float:
    """exp of the entropy of the normalized singular values (Roy & Vetterli, 2007): from 1 (one
    direction carries everything) to the rank (all singular values equal); 0 for a zero matrix."""
    sv = torch.linalg.svdvals(matrix.detach().double())
    total = float(sv.sum())
    if total == 0.0 or not math.isfinite(total):
        return 0.0
    p = sv / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))
