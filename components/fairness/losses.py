"""Dependence penalties between a classifier's score and a sensitive attribute S.

Seed paper: "group fairness via the Cramer-von-Mises sensitivity index", NeurIPS 2026 (see
specs/cvm_fairness/README.md): `CvMDependence` is its O(B log B) rank-based penalty; `HSIC` is the
quadratic-cost dependence baseline it is compared against.

Both follow the loss contract of `registry.LOSSES`: called as ``loss(outputs, batch)``, they return
the unweighted penalty; the paper's lambda is the weight of their term in a `weighted_sum`
(``terms: {cvm: {type: cvm_dependence, weight: 10.0}}``). ``outputs`` are logits of a
binary classifier, (N, 2) (the score is the logit difference ``outputs[:, 1] - outputs[:, 0]``),
(N, 1) or (N,); ``batch["group"]`` holds S as integers (0/1 for a binary attribute).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor, nn

from components.fairness.soft_rank import hard_rank, soft_rank
from components.types import PositiveFloat


def binary_score(outputs: Tensor, name: str) -> Tensor:
    """The classifier's score (N,) from logits (N, 2), (N, 1) or (N,)."""
    if outputs.ndim == 2 and outputs.shape[1] == 2:
        return outputs[:, 1] - outputs[:, 0]
    if outputs.ndim == 2 and outputs.shape[1] == 1:
        return outputs[:, 0]
    if outputs.ndim == 1:
        return outputs
    raise ValueError(
        f"{name} needs binary-classifier outputs of shape (N, 2), (N, 1) or (N,), got {tuple(outputs.shape)}"
    )


def sensitive_attribute(batch: Any, name: str) -> Tensor:
    """``batch["group"]`` as a long tensor, or an error that says which data modules provide it."""
    if not isinstance(batch, dict) or "group" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise KeyError(
            f"{name} needs the sensitive attribute in batch['group'], but the batch has keys {keys}; "
            "the data module must provide a 'group' column (e.g. synthetic_fair_tabular, uci_adult)"
        )
    return batch["group"].reshape(-1).long()


def cvm_index(score: Tensor, group: Tensor, regularization: float | None = None) -> Tensor:
    """Rank-based estimate of the CvM sensitivity index of `score` with respect to `group`.

    Population quantity (Gamboa, Klein, Lagnoux 2018; Chatterjee's xi with S as the explanatory
    variable), for a continuous score with CDF F and within-group CDFs F_g, group shares p_g:

        xi = int Var_S(F_S(t)) dF(t) / int F(1 - F) dF
           = 6 * sum_g p_g (1 - p_g)^2 int (F_g - F_{not g})^2 dF,

    which for binary S is 6 p (1 - p) int (F_1 - F_0)^2 dF. It is 0 iff the score is independent of
    S and at most 2 p (1 - p) <= 1/2 (groups fully separated) for binary S.

    Estimator on a batch of B scores, with R_i the pooled rank of score i, n_g the size of group g
    and r_i^A the rank of score i among the scores of the set A (i in A):

        #{j in g: score_j <= score_i} = r_i^g                 if i in g,
                                      = R_i - r_i^{not g}     otherwise,
        F_g(score_i) = #{j in g: score_j <= score_i} / n_g,   F_{not g} likewise with B - n_g,
        xi_hat = 6 * sum_g p_g (1 - p_g)^2 * (1 / B) sum_i (F_g(score_i) - F_{not g}(score_i))^2,

    with p_g = n_g / B. For binary S, "not 1" is group 0, so only the pooled ranks and the two
    within-group rank vectors are needed: three sorts, O(B log B). Ranks are Blondel et al.'s soft
    ranks, or hard ranks when `regularization` is None; a set of n scores is soft-ranked with
    strength ``regularization * B / n``, so that every empirical CDF ``rank / n`` is smoothed alike
    (with one strength for all sets, the within-group CDFs come out steeper than the pooled one
    and independent scores get a spurious positive value, ~0.07 at B = 256 and eps = 0.02). Groups of
    more than two values use one-vs-rest ranks (2 G + 1 sorts).
    With hard ranks each squared gap is at most 1, so the estimate lies in [0, 6 p (1 - p)] <= 1.5
    (binary S); its population value is at most 1/2.
    """
    values = torch.unique(group)
    size = score.shape[0]

    def rank(subset: Tensor) -> Tensor:
        if regularization is None:
            return hard_rank(subset)
        # Same smoothing on the CDF scale for every subset: a subset of n scores is ranked with
        # strength eps * B / n, so rank / n has the same slope 1 / (eps B) inside merged blocks.
        return soft_rank(subset, regularization * size / subset.shape[0])

    if len(values) < 2:
        return score.sum() * 0.0
    pooled = rank(score)
    masks = [group == value for value in values]
    within = [rank(score[mask]) for mask in masks]
    total = score.new_zeros(())
    for index, mask in enumerate(masks):
        n_in = int(mask.sum())
        if len(values) == 2:
            rest_ranks = within[1 - index]
        else:
            rest_ranks = rank(score[~mask])
        count_in = torch.empty_like(score)
        count_in[mask] = within[index]
        count_in[~mask] = pooled[~mask] - rest_ranks
        count_rest = pooled - count_in
        gap = count_in / n_in - count_rest / (size - n_in)
        share = n_in / size
        total = total + share * (1.0 - share) ** 2 * gap.pow(2).mean()
    return 6.0 * total


class CvMDependence(nn.Module):
    """CvM dependence penalty xi(S, score) from soft ranks; O(B log B) per batch, bounded.

    The exact estimator is `cvm_index` (see its docstring): for binary S,
    ``6 p (1 - p) * mean_i (F_1(score_i) - F_0(score_i))^2`` with the within-group CDFs read off
    pooled and within-group soft ranks. A batch in which only one group is present gives 0 (with a
    gradient graph, so the step still runs).

    Args:
        regularization: Soft-rank strength eps > 0, in standard deviations of the batch's scores
            (in score units without `standardize`); smaller is closer to hard ranks and gives
            sparser gradients. Entries closer than about eps share a rank, so eps should be of the
            order of the gap between neighbouring scores, about 2.5 / B standard deviations near
            the median: 0.02 (the paper's tiny setup) suits B = 256; scale it like 1 / B.
        on: Rank the logit ("logit") or its sigmoid ("probability"). Hard ranks are the same for
            both; soft ranks are not, since eps is in the units of the ranked value.
        standardize: Divide the score by its batch standard deviation before ranking, so that eps
            is in standard deviations. Without it the model can lower the penalty by shrinking its
            logits (the ordering, hence accuracy and the DP gap, stay the same while the soft ranks
            merge into one block and the estimate falls to ~0); on the synthetic tiny setup that
            escape made lambda = 10 change nothing, while with it the DP gap falls steadily in lambda.
    """

    name = "cvm_dependence"

    def __init__(
        self,
        regularization: PositiveFloat = 0.02,
        on: Literal["logit", "probability"] = "logit",
        standardize: bool = True,
    ) -> None:
        super().__init__()
        if on not in ("logit", "probability"):
            raise ValueError(f"on must be 'logit' or 'probability', got {on!r}")
        self.regularization, self.on = regularization, on
        self.standardize = standardize

    def forward(self, outputs: Tensor, batch: dict[str, Tensor]) -> Tensor:
        score = binary_score(outputs, self.name)
        group = sensitive_attribute(batch, self.name)
        if self.on == "probability":
            score = torch.sigmoid(score)
        if self.standardize and score.numel() > 1:
            score = score / score.std().clamp_min(1e-12)
        return cvm_index(score, group.to(score.device), self.regularization)


class HSIC(nn.Module):
    """Biased HSIC between the score and S (Gretton et al. 2005); O(B^2) time and memory.

    ``HSIC = tr(K H L H) / (B - 1)^2`` with ``K_ij = exp(-(score_i - score_j)^2 / (2 sigma^2))``,
    the delta kernel ``L_ij = [S_i == S_j]`` and ``H = I - 11^T / B``; computed as
    ``sum((H K H) * L) / (B - 1)^2``. The quadratic-cost baseline of the CvM paper.

    Args:
        bandwidth: Gaussian kernel width sigma > 0 on the score; None uses the median heuristic
            (median pairwise distance of the batch's scores, not differentiated through).
    """

    name = "hsic"

    def __init__(self, bandwidth: PositiveFloat | None = None) -> None:
        super().__init__()
        self.bandwidth = bandwidth

    def forward(self, outputs: Tensor, batch: dict[str, Tensor]) -> Tensor:
        score = binary_score(outputs, self.name)
        group = sensitive_attribute(batch, self.name).to(score.device)
        size = score.shape[0]
        if size < 2 or len(torch.unique(group)) < 2:
            return score.sum() * 0.0
        sigma = self.bandwidth
        if sigma is None:
            distances = torch.pdist(score.detach()[:, None])
            sigma = float(distances.median()) if distances.numel() else 1.0
            sigma = sigma if sigma > 0 else 1.0
        kernel = torch.exp(-(score[:, None] - score[None, :]).pow(2) / (2.0 * sigma**2))
        centred = kernel - kernel.mean(0, keepdim=True) - kernel.mean(1, keepdim=True) + kernel.mean()
        _, inverse = torch.unique(group, return_inverse=True)
        one_hot = torch.nn.functional.one_hot(inverse).to(score.dtype)
        return ((centred @ one_hot) * one_hot).sum() / (size - 1) ** 2
