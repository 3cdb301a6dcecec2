"""torch's optimizers with the ranges of their arguments in the signature.

Each class is the torch optimizer itself (a subclass that adds no behaviour): it redeclares the
arguments a spec usually sets with their valid ranges (components/types.py), so that `exp validate`
rejects `lr: -1` or `betas: [0.9, 1.5]` without importing torch, and passes every other keyword on
to torch unchanged (the schema follows `**kwargs` into torch's signature). Defaults are torch's,
written the same way, so the operative spec (and the hash of a run) is the one torch's signature gave.
"""

from __future__ import annotations

from typing import Any

import torch

from components.types import NonNegativeFloat, PositiveFloat, ProperFraction

Betas = tuple[ProperFraction, ProperFraction]


class SGD(torch.optim.SGD):
    """Stochastic gradient descent, with momentum (torch.optim.SGD).

    Args:
        lr: Learning rate, > 0.
        momentum: Momentum factor, >= 0 (0: plain SGD).
        dampening: Dampening of the momentum.
        weight_decay: L2 penalty, >= 0.
    """

    def __init__(self, params: Any, lr: PositiveFloat = 1e-3, momentum: NonNegativeFloat = 0,
                 dampening: float = 0, weight_decay: NonNegativeFloat = 0, **kwargs: Any) -> None:
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                         **kwargs)


class Adam(torch.optim.Adam):
    """Adam (Kingma & Ba, 2015; torch.optim.Adam).

    Args:
        lr: Learning rate, > 0.
        betas: Decay rates of the first and second moment averages, each in [0, 1).
        eps: Term added to the denominator for numerical stability, >= 0.
        weight_decay: L2 penalty added to the gradient, >= 0.
    """

    def __init__(self, params: Any, lr: PositiveFloat = 1e-3, betas: Betas = (0.9, 0.999),
                 eps: NonNegativeFloat = 1e-8, weight_decay: NonNegativeFloat = 0, **kwargs: Any) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **kwargs)


class AdamW(torch.optim.AdamW):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019; torch.optim.AdamW).

    Args:
        lr: Learning rate, > 0.
        betas: Decay rates of the first and second moment averages, each in [0, 1).
        eps: Term added to the denominator for numerical stability, >= 0.
        weight_decay: Decoupled weight decay coefficient, >= 0.
    """

    def __init__(self, params: Any, lr: PositiveFloat = 1e-3, betas: Betas = (0.9, 0.999),
                 eps: NonNegativeFloat = 1e-8, weight_decay: NonNegativeFloat = 1e-2, **kwargs: Any) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, **kwargs)
