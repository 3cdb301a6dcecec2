"""Group-fairness gaps of a binary classifier, accumulated over an epoch (DDP-safe sum states).

Seed paper: "group fairness via the Cramer-von-Mises sensitivity index", NeurIPS 2026 (see
specs/cvm_fairness/README.md), which reports demographic-parity and equal-opportunity gaps.
Definitions follow fairlearn's ``demographic_parity_difference`` / ``equal_opportunity_difference``
(``method="between_groups"``): the largest minus the smallest per-group rate over the groups seen,
0 when fewer than two groups were seen. For binary S that is |rate(S=1) - rate(S=0)|.

Updated as ``metric.update(outputs, batch)``: ``outputs`` are logits (N, 2) (predicted positive =
argmax is 1), (N, 1) or (N,) (predicted positive = logit > 0); ``batch`` holds "y" and "group".
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
from annotated_types import Ge
from torch import Tensor
from torchmetrics import Metric


def predicted_positive(outputs: Tensor, name: str) -> Tensor:
    """Hard positive predictions (N,) of a binary classifier from its logits."""
    if outputs.ndim == 2 and outputs.shape[1] == 2:
        return outputs.argmax(dim=1) == 1
    if outputs.ndim == 2 and outputs.shape[1] == 1:
        return outputs[:, 0] > 0
    if outputs.ndim == 1:
        return outputs > 0
    raise ValueError(
        f"{name} needs binary-classifier outputs of shape (N, 2), (N, 1) or (N,), got {tuple(outputs.shape)}"
    )


def _group(batch: Any, name: str, num_groups: int) -> Tensor:
    if not isinstance(batch, dict) or "group" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise KeyError(
            f"{name} needs the sensitive attribute in batch['group'], but the batch has keys {keys}; "
            "the data module must provide a 'group' column (e.g. synthetic_fair_tabular, uci_adult)"
        )
    group = batch["group"].reshape(-1).long()
    if group.numel() and (int(group.min()) < 0 or int(group.max()) >= num_groups):
        raise ValueError(
            f"{name}: batch['group'] values must be in [0, {num_groups - 1}] (num_groups={num_groups}), "
            f"got values in [{int(group.min())}, {int(group.max())}]"
        )
    return group


class _GroupRateGap(Metric):
    """Max - min over seen groups of P(yhat = 1 | group, condition)."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    metric_name = "group_rate_gap"

    def __init__(self, num_groups: Annotated[int, Ge(2)] = 2) -> None:
        super().__init__()
        self.num_groups = num_groups
        self.add_state("positives", default=torch.zeros(num_groups, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("totals", default=torch.zeros(num_groups, dtype=torch.long), dist_reduce_fx="sum")

    def _condition(self, batch: dict[str, Tensor]) -> Tensor | None:
        """Rows that count (None: all)."""
        return None

    def update(self, outputs: Tensor, batch: dict[str, Tensor]) -> None:  # type: ignore[override]
        positive = predicted_positive(outputs, self.metric_name).reshape(-1)
        group = _group(batch, self.metric_name, self.num_groups).to(positive.device)
        keep = self._condition(batch)
        if keep is not None:
            keep = keep.to(positive.device)
            positive, group = positive[keep], group[keep]
        self.positives += torch.bincount(group[positive], minlength=self.num_groups)
        self.totals += torch.bincount(group, minlength=self.num_groups)

    def compute(self) -> Tensor:
        seen = self.totals > 0
        if int(seen.sum()) < 2:
            return torch.tensor(0.0, device=self.totals.device)
        rates = self.positives[seen].double() / self.totals[seen].double()
        return (rates.max() - rates.min()).float()


class DemographicParityGap(_GroupRateGap):
    """|P(yhat = 1 | S = 1) - P(yhat = 1 | S = 0)| (max - min over groups for more than two).

    Args:
        num_groups: Number of values of S (the group column holds 0..num_groups-1).
    """

    metric_name = "demographic_parity_gap"


class EqualOpportunityGap(_GroupRateGap):
    """|TPR(S = 1) - TPR(S = 0)|: the parity gap among the positives y = 1 (Hardt et al. 2016).

    Args:
        num_groups: Number of values of S (the group column holds 0..num_groups-1).
    """

    metric_name = "equal_opportunity_gap"

    def _condition(self, batch: dict[str, Tensor]) -> Tensor | None:
        return batch["y"].reshape(-1) == 1
