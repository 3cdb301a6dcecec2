"""Function-preserving symmetry transforms of a ReLU MLP and the alignments built from them.

An MLP x -> W_L relu(... relu(W_1 x + b_1) ...) + b_L keeps its function when the units of a
hidden layer l are permuted (P_l) and scaled by positive factors (s_l), the next layer undoing
both: W_l' = diag(s_l) P_l W_l P_{l-1}^T diag(1/s_{l-1}), b_l' = diag(s_l) P_l b_l (relu commutes
with both). `transform` applies any such (P, s), hard or relaxed (a doubly stochastic P from
Sinkhorn is not function-preserving; the learned alignments use it for the gradient only).

Alignments of endpoint B to endpoint A (A's weights, B's weights -> a transform per side):
- `weight_matching`: Git Re-Basin's weight matching (Ainsworth et al. 2023): coordinate descent
  over the hidden layers, each step a linear assignment maximizing the inner product of A's and
  the permuted B's weights at the layer's in- and outgoing weights. The assignment is scipy's
  `linear_sum_assignment` (a maintained Jonker-Volgenant solver), not a hand-written one.
- `learn_alignment`: learned transforms that minimize the expected loss along the linear path,
  E_{alpha ~ U(0, 1)} L((1 - alpha) T_A(A) + alpha T_B(B)), over T_B alone (`sides='one_sided'`,
  T_A = identity) or over T_A and T_B together (`sides='dual'`, the paper's dual learning). Each
  learned side holds, per hidden layer, permutation logits Z and log-scales u. The forward pass
  uses the hard permutation (the linear assignment of Z: the Sinkhorn matrix of Z has the same
  one, its row and column factors are additive in the log domain) so that every endpoint keeps
  its function; the gradient reaches Z through the Sinkhorn relaxation (straight-through, as the
  Sinkhorn re-basin of Pena et al. 2023). Sinkhorn is hand-written (ten lines of logsumexp
  normalization, differentiable through torch autograd): no maintained torch package for it is a
  dependency here, and POT's `ot.sinkhorn` solves a transport problem, not this gradient path.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import nn

Layers = list[tuple[torch.Tensor, torch.Tensor]]


def mlp_layers(mlp: nn.Module) -> Layers:
    """(weight, bias) of each nn.Linear of an MLP, input side first, detached copies."""
    out = [(m.weight.detach().clone(), m.bias.detach().clone()) for m in mlp.modules() if isinstance(m, nn.Linear)]
    if len(out) < 2:
        raise ValueError("an MLP with at least one hidden layer is needed")
    return out


def mlp_apply(layers: Layers, x: torch.Tensor) -> torch.Tensor:
    """The ReLU MLP of `layers` applied to x (N, in) -> (N, out)."""
    h = x
    for i, (w, b) in enumerate(layers):
        h = F.linear(h, w, b)
        if i < len(layers) - 1:
            h = torch.relu(h)
    return h


def transform(layers: Layers, perms: list[torch.Tensor] | None, scales: list[torch.Tensor] | None) -> Layers:
    """The MLP with hidden layer l's units permuted by the matrix perms[l] (n_l x n_l; row i of
    the new layer is sum_j P[i, j] * old unit j) and scaled by scales[l] (> 0). None: identity."""
    hidden = len(layers) - 1
    out = []
    for i, (w, b) in enumerate(layers):
        if i < hidden:
            if perms is not None:
                w, b = perms[i] @ w, perms[i] @ b
            if scales is not None:
                w, b = scales[i][:, None] * w, scales[i] * b
        if i > 0:
            if perms is not None:
                w = w @ perms[i - 1].T
            if scales is not None:
                w = w / scales[i - 1][None, :]
        out.append((w, b))
    return out


def interpolate(a: Layers, b: Layers, alpha: float | torch.Tensor) -> Layers:
    """(1 - alpha) a + alpha b, layer by layer."""
    return [((1 - alpha) * wa + alpha * wb, (1 - alpha) * ba + alpha * bb) for (wa, ba), (wb, bb) in zip(a, b)]


def permutation_matrix(index: np.ndarray | torch.Tensor) -> torch.Tensor:
    """The matrix P with P[i, index[i]] = 1 (new unit i is old unit index[i])."""
    index = torch.as_tensor(np.asarray(index), dtype=torch.long)
    return F.one_hot(index, len(index)).float()


def assignment(score: torch.Tensor) -> torch.Tensor:
    """The permutation (as index: new i <- old index[i]) maximizing sum_i score[i, index[i]]."""
    rows, cols = linear_sum_assignment(score.detach().double().cpu().numpy(), maximize=True)
    index = np.empty(len(rows), dtype=np.int64)
    index[rows] = cols
    return torch.as_tensor(index)


def weight_matching(a: Layers, b: Layers, max_rounds: int = 100, seed: int = 0) -> list[torch.Tensor]:
    """Git Re-Basin weight matching of B to A: one permutation matrix per hidden layer."""
    hidden = len(a) - 1
    index = [torch.arange(a[i][0].shape[0]) for i in range(hidden)]
    gen = torch.Generator().manual_seed(seed)
    for _ in range(max_rounds):
        changed = False
        for layer in torch.randperm(hidden, generator=gen).tolist():
            wa, ba = a[layer]
            wb, bb = b[layer]
            if layer > 0:
                wb = wb[:, index[layer - 1]]
            score = wa @ wb.T + torch.outer(ba, bb)
            na, nb = a[layer + 1][0], b[layer + 1][0]
            if layer + 1 < hidden:
                nb = nb[index[layer + 1], :]
            score = score + na.T @ nb
            new = assignment(score)
            rows = torch.arange(len(new))
            # accept only a strict improvement, so that ties cannot make the rounds cycle
            if score[rows, new].sum() > score[rows, index[layer]].sum() + 1e-9:
                index[layer], changed = new, True
        if not changed:
            break
    return [permutation_matrix(i) for i in index]


def sinkhorn(logits: torch.Tensor, iters: int = 20) -> torch.Tensor:
    """A doubly stochastic matrix from logits: alternate row and column normalization in log space."""
    log_p = logits
    for _ in range(iters):
        log_p = log_p - torch.logsumexp(log_p, dim=1, keepdim=True)
        log_p = log_p - torch.logsumexp(log_p, dim=0, keepdim=True)
    return log_p.exp()


class LearnedSide(nn.Module):
    """One endpoint's learned transform: per hidden layer, permutation logits and log-scales."""

    def __init__(self, init_perms: list[torch.Tensor], init_logit: float, temperature: float,
                 sinkhorn_iters: int, scale: bool) -> None:
        super().__init__()
        self.logits = nn.ParameterList([nn.Parameter(init_logit * p.clone()) for p in init_perms])
        self.log_scales = nn.ParameterList([nn.Parameter(torch.zeros(len(p))) for p in init_perms]) if scale else None
        self.temperature, self.iters = temperature, sinkhorn_iters

    def perms(self, hard_only: bool = False) -> list[torch.Tensor]:
        out = []
        for z in self.logits:
            hard = permutation_matrix(assignment(z))
            if hard_only:
                out.append(hard)
            else:
                soft = sinkhorn(z / self.temperature, self.iters)
                out.append(hard + soft - soft.detach())  # straight-through: hard forward, soft gradient
        return out

    def scales(self) -> list[torch.Tensor] | None:
        return None if self.log_scales is None else [u.exp() for u in self.log_scales]

    def apply(self, layers: Layers, hard_only: bool = False) -> Layers:
        return transform(layers, self.perms(hard_only), self.scales())


def learn_alignment(a: Layers, b: Layers, x: torch.Tensor, y: torch.Tensor, sides: str, init_perms_b: list[torch.Tensor],
                    steps: int, lr: float, batch_size: int, alphas_per_step: int, init_logit: float,
                    temperature: float, sinkhorn_iters: int, scale: bool, seed: int) -> tuple[Layers, Layers]:
    """Learned transforms (module docstring); returns (T_A(A), T_B(B)) with hard permutations.
    `sides`: 'one_sided' (T_A = identity) or 'dual'. B's side starts at `init_perms_b` (e.g. weight
    matching), A's at the identity; every scale at 1."""
    if sides not in ("one_sided", "dual"):
        raise ValueError(f"sides must be 'one_sided' or 'dual', got {sides!r}")
    side_b = LearnedSide(init_perms_b, init_logit, temperature, sinkhorn_iters, scale)
    eye = [torch.eye(len(p)) for p in init_perms_b]
    side_a = LearnedSide(eye, init_logit, temperature, sinkhorn_iters, scale) if sides == "dual" else None
    params = list(side_b.parameters()) + (list(side_a.parameters()) if side_a is not None else [])
    optimizer = torch.optim.Adam(params, lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pick = torch.randint(len(x), (batch_size,), generator=gen)
        xb, yb = x[pick], y[pick]
        ta = side_a.apply(a) if side_a is not None else a
        tb = side_b.apply(b)
        loss = 0.0
        for alpha in torch.rand(alphas_per_step, generator=gen).tolist():
            loss = loss + F.cross_entropy(mlp_apply(interpolate(ta, tb, alpha), xb), yb)
        optimizer.zero_grad()
        (loss / alphas_per_step).backward()
        optimizer.step()
    with torch.no_grad():
        ta = side_a.apply(a, hard_only=True) if side_a is not None else a
        tb = side_b.apply(b, hard_only=True)
    return [(w.detach(), v.detach()) for w, v in ta], [(w.detach(), v.detach()) for w, v in tb]
