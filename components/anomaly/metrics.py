"""Threshold-free detection metrics of raw anomaly scores (higher = more anomalous) against
batch["y"] (1 anomaly, 0 normal): AUROC and average precision (AUPR), through torchmetrics.

Raw scores (reconstruction errors, negated sklearn scores) are unbounded, and torchmetrics reads
scores outside [0, 1] as logits and applies a sigmoid, which saturates in float32 (every score
above ~17 becomes 1.0: ties that change the AUROC). Both metrics depend only on the order of the
scores, so compute() first replaces them by their dense ranks scaled into [0, 1] (equal scores
keep equal ranks), which torchmetrics takes as they are: the result is exactly the AUROC / AP of
the raw scores. Scores and labels are kept per example and concatenated across DDP processes.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torchmetrics import Metric
from torchmetrics.functional.classification import binary_auroc, binary_average_precision
from torchmetrics.utilities import dim_zero_cat


def rank_scale(scores: torch.Tensor) -> torch.Tensor:
    """Dense ranks of `scores` divided by the largest rank: in [0, 1], same order, same ties."""
    _, ranks = torch.unique(scores, sorted=True, return_inverse=True)
    ranks = ranks.to(torch.float64)
    top = ranks.max()
    return ranks / top if top > 0 else ranks


class _ScoreMetric(Metric):
    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    name = "score_metric"
    score: Callable[..., torch.Tensor]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("scores", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        scores = outputs.detach().reshape(-1) if outputs.ndim == 1 or outputs.shape[-1] == 1 else None
        if scores is None or outputs.ndim > 2:
            raise ValueError(f"{self.name}: outputs must be one anomaly score per row, (N,) or (N, 1), "
                             f"got {tuple(outputs.shape)}")
        target = batch["y"].reshape(-1).long()
        if target.shape[0] != scores.shape[0]:
            raise ValueError(f"{self.name}: {scores.shape[0]} scores but {target.shape[0]} labels in batch['y']")
        self.scores.append(scores.double())
        self.target.append(target)

    def compute(self) -> torch.Tensor:
        if isinstance(self.target, list) and not self.target:
            raise RuntimeError(f"{self.name}: compute() called before any update() since the last reset()")
        return self.score(rank_scale(dim_zero_cat(self.scores)), dim_zero_cat(self.target))


class AnomalyAUROC(_ScoreMetric):
    """Area under the ROC curve of the anomaly scores: the probability that a random anomaly
    scores above a random normal row (ties count one half). 0.5 is chance."""

    name = "anomaly_auroc"
    score = staticmethod(binary_auroc)

    def __init__(self) -> None:
        super().__init__()


class AnomalyAveragePrecision(_ScoreMetric):
    """Average precision (area under the precision-recall curve) of the anomaly scores, the
    anomalies being the positive class; chance is their share of the rows."""

    name = "anomaly_average_precision"
    score = staticmethod(binary_average_precision)

    def __init__(self) -> None:
        super().__init__()
