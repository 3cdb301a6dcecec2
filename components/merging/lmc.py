"""The loss barrier along the linear path between two endpoints, after an alignment.

Seed paper: lmc_dual_merge (NeurIPS 2026; specs/lmc_dual_merge/README.md): both endpoints learn
function-preserving transforms toward one shared linear interpolation path (dual learning),
which lowers the loss barrier below that of aligning one endpoint only.

The analysis `lmc_barrier` (a `posthoc_analysis` on an `endpoint_pair`, components/merging/pair.py)
aligns member b to member a by `align` (components/merging/symmetry.py):
- `none`: no alignment (the naive path);
- `weight_matching`: Git Re-Basin weight matching of b to a (permutations, a one-sided alignment);
- `one_sided`: transforms of b alone learned on the train split's path loss, from weight matching;
- `dual`: transforms of a and of b learned together, the same steps, learning rate, batches and
  start (b at weight matching, a at the identity).
Every arm is then measured on the whole test split at the same `points` interpolation weights
alpha = 0, 1/(points-1), ..., 1 of theta(alpha) = (1 - alpha) T_A(a) + alpha T_B(b).

Results (logged as test/<name>): `loss_a00` ... `loss_a10` (test cross-entropy at alpha = k/10
when points = 11; the two digits are round(100 * alpha) // 10), `excess_aKK` (loss minus the
linear interpolation of the endpoint losses), `barrier` (max over alpha of excess: the loss
barrier), `endpoint_loss` (mean of the two endpoint losses), `loss_a`, `loss_b`, `mid_accuracy`
(test accuracy at alpha = 1/2), `min_accuracy` (the lowest test accuracy along the path),
`endpoint_accuracy` (mean of the two endpoints'), `function_change` (largest change of an
endpoint's test logits under its transform: ~1e-6, the transforms preserve the function).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from components.merging.symmetry import (interpolate, learn_alignment, mlp_apply, mlp_layers, transform,
                                        weight_matching)
from components.types import NonNegativeInt, PositiveFloat, PositiveInt

Align = Literal["none", "weight_matching", "one_sided", "dual"]
ALIGNS = ("none", "weight_matching", "one_sided", "dual")


class LMCBarrier:
    """Align an endpoint pair by `align` and measure the test loss along the linear path.

    Args:
        align: none, weight_matching, one_sided or dual (module docstring).
        points: Interpolation weights measured, evenly spaced in [0, 1] (11: alpha = 0, 0.1, ..., 1).
        steps: Adam steps of a learned alignment (one_sided, dual: the same for both).
        lr: Adam learning rate of a learned alignment.
        batch_size: Train samples per step.
        alphas_per_step: Interpolation weights drawn (uniformly) per step.
        init_logit: Permutation logits start at init_logit x the starting permutation matrix.
        temperature: Sinkhorn temperature of the relaxed permutation (the gradient path).
        sinkhorn_iters: Sinkhorn normalization rounds.
        scale: Learn positive per-unit scalings too.
        seed: Draws the learned alignments' batches and alphas, and weight matching's layer order.
    """

    splits = ("train", "test")

    def __init__(self, align: Align = "dual", points: PositiveInt = 11, steps: NonNegativeInt = 200,
                 lr: PositiveFloat = 0.1, batch_size: PositiveInt = 256, alphas_per_step: PositiveInt = 2,
                 init_logit: PositiveFloat = 1.0, temperature: PositiveFloat = 1.0,
                 sinkhorn_iters: PositiveInt = 20, scale: bool = True, seed: NonNegativeInt = 0) -> None:
        if align not in ALIGNS:
            raise ValueError(f"align must be one of {list(ALIGNS)}, got {align!r}")
        if points < 2:
            raise ValueError(f"points must be >= 2 (the two endpoints), got {points}")
        self.align, self.points, self.steps, self.lr = align, points, steps, lr
        self.batch_size, self.alphas_per_step, self.init_logit = batch_size, alphas_per_step, init_logit
        self.temperature, self.sinkhorn_iters, self.scale, self.seed = temperature, sinkhorn_iters, scale, seed

    def __call__(self, model: nn.Module, splits: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        if not hasattr(model, "members"):
            raise TypeError(f"lmc_barrier reads an endpoint_pair model (members a and b), got {type(model).__name__}")
        member_a, member_b = model.members()
        a, b = mlp_layers(member_a), mlp_layers(member_b)
        train, test = splits["train"], splits["test"]
        x, y = train["x"].float(), train["y"].long()
        if self.align == "none":
            ta, tb = a, b
        else:
            perms = weight_matching(a, b, seed=self.seed)
            if self.align == "weight_matching":
                ta, tb = a, transform(b, perms, None)
            else:
                with torch.enable_grad():
                    ta, tb = learn_alignment(
                        a, b, x, y, self.align, perms, self.steps, self.lr, self.batch_size, self.alphas_per_step,
                        self.init_logit, self.temperature, self.sinkhorn_iters, self.scale, self.seed)
        xt, yt = test["x"].float(), test["y"].long()
        out: dict[str, float] = {}
        with torch.no_grad():
            change = max(float((mlp_apply(ta, xt) - mlp_apply(a, xt)).abs().max()),
                         float((mlp_apply(tb, xt) - mlp_apply(b, xt)).abs().max()))
            alphas = [k / (self.points - 1) for k in range(self.points)]
            losses, accs = [], []
            for alpha in alphas:
                logits = mlp_apply(interpolate(ta, tb, alpha), xt)
                losses.append(float(F.cross_entropy(logits, yt)))
                accs.append(float((logits.argmax(-1) == yt).float().mean()))
        la, lb = losses[0], losses[-1]
        excess = [loss - ((1 - al) * la + al * lb) for loss, al in zip(losses, alphas)]
        for al, loss, ex in zip(alphas, losses, excess):
            key = f"a{round(100 * al) // 10:02d}" if self.points == 11 else f"a{round(1000 * al):04d}"
            out[f"loss_{key}"] = loss
            out[f"excess_{key}"] = ex
        mid = min(range(self.points), key=lambda k: abs(alphas[k] - 0.5))
        out.update(barrier=max(excess), endpoint_loss=(la + lb) / 2, loss_a=la, loss_b=lb,
                   mid_accuracy=accs[mid], min_accuracy=min(accs), endpoint_accuracy=(accs[0] + accs[-1]) / 2,
                   function_change=change)
        return out
