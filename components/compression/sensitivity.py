"""Loss, gradient and diagonal Fisher of a model's weights on calibration data.

The sensitivity of a weight perturbation d (one tile lowered by a bit) is the second-order Taylor
estimate of the loss change at a reference point W,

    dL(d) ~= g . d + 1/2 sum F * d^2,

with g the calibration-loss gradient and F the diagonal empirical Fisher at W (the usual stand-in
for the Hessian's diagonal in quantization and pruning: HAWQ, OBD-style saliencies, SqueezeLLM).
What the reference point is decides between the two estimates scalebits compares
(components/compression/allocation.py): `static` takes W = the full-precision model once;
`dynamic` takes W = the current quantized model, re-measured as the quantization progresses.

F is estimated from micro-batch gradients: with M micro-batches of T_m targets each and mean
gradients g_m, F ~= mean_m(T_m * g_m^2) (for a mean loss over targets, the micro-batch mean's
variance is F / T_m when the gradient noise dominates). Hand-written: the quantities are a few
lines of autograd and no library exposes them for a plain nn.Module's Linear weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def cross_entropy_sum(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Summed cross-entropy and number of targets of classifier logits (N, C) or LM logits
    (B, L, V) against integer targets y (N,) or (B, L)."""
    flat = logits.reshape(-1, logits.shape[-1])
    target = y.reshape(-1)
    return F.cross_entropy(flat, target, reduction="sum"), target.numel()


@torch.no_grad()
def mean_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 256) -> float:
    """Mean cross-entropy (nats per target) of `model` on (x, y), in batches (moved to the
    model's device one at a time)."""
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for start in range(0, len(x), batch_size):
        xb, yb = x[start:start + batch_size].to(device), y[start:start + batch_size].to(device)
        loss, n = cross_entropy_sum(model(xb), yb)
        total, count = total + float(loss), count + n
    return total / count


def gradient_and_fisher(
    model: nn.Module, weights: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor, micro_batch: int = 1,
) -> tuple[list[torch.Tensor], list[torch.Tensor], float]:
    """Gradient g and diagonal empirical Fisher F of the mean calibration loss with respect to each
    tensor of `weights` (module docstring), and the mean loss itself.

    Args:
        model: The network, evaluated as it is (in eval mode for the call).
        weights: Parameters of `model` to differentiate (the quantized layers' weights).
        x, y: Calibration inputs and integer targets.
        micro_batch: Samples per micro-batch of the Fisher estimate.
    """
    was_training = model.training
    model.eval()
    grads = [torch.zeros_like(w) for w in weights]
    fisher = [torch.zeros_like(w) for w in weights]
    total_loss, total_count, chunks = 0.0, 0, 0
    device = weights[0].device
    try:
        for start in range(0, len(x), micro_batch):
            xb, yb = x[start:start + micro_batch].to(device), y[start:start + micro_batch].to(device)
            loss_sum, count = cross_entropy_sum(model(xb), yb)
            parts = torch.autograd.grad(loss_sum, weights)
            for g, f, part in zip(grads, fisher, parts):
                g.add_(part)                               # summed over all targets
                f.add_(part.square(), alpha=1.0 / count)   # T_m * (part / T_m)^2
            total_loss, total_count, chunks = total_loss + float(loss_sum.detach()), total_count + count, chunks + 1
    finally:
        model.train(was_training)
    grads = [g / total_count for g in grads]
    fisher = [f / chunks for f in fisher]
    return grads, fisher, total_loss / total_count
