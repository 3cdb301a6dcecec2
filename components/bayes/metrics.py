"""Calibration metrics of a classifier, for the metric contract update(outputs, batch): outputs are
logits or log probabilities (N, C); softmax of them is the predicted distribution.

- `ece`: expected calibration error, torchmetrics' multiclass_calibration_error (top-label
  confidence in `bins` equal-width bins, L1 norm: sum over bins of |accuracy - confidence| times
  the bin's share of examples).
- `nll`: mean negative log-likelihood of the labels under the softmax, in nats (torchmetrics has
  no classification NLL; it is cross-entropy of the gathered outputs, torch's cross_entropy).

Both keep one probability row per example (as AUROC does), exact under DDP.
"""

from __future__ import annotations

import torch
from torchmetrics.functional.classification import multiclass_calibration_error

from components.metrics.standard import ClassificationMetric
from components.types import PositiveInt


class _ProbabilityMetric(ClassificationMetric):
    higher_is_better = False

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        if outputs.ndim != 2 or outputs.shape[1] < 2:
            raise ValueError(f"{self.name}: outputs must be (N, C) logits with C >= 2, got {tuple(outputs.shape)}")
        super().update(outputs, batch)

    def _rows(self, outputs: torch.Tensor) -> torch.Tensor:
        return outputs.log_softmax(dim=1)


class ExpectedCalibrationError(_ProbabilityMetric):
    """Expected calibration error (L1, top-label confidence, equal-width bins; torchmetrics).

    Args:
        bins: Number of confidence bins.
    """

    name = "ece"

    def __init__(self, bins: PositiveInt = 15) -> None:
        super().__init__()
        self.bins = bins

    def compute(self) -> torch.Tensor:
        log_probs, target, num_classes = self._gathered()
        return multiclass_calibration_error(log_probs.exp(), target, num_classes=num_classes, n_bins=self.bins,
                                            norm="l1")


class NegativeLogLikelihood(_ProbabilityMetric):
    """Mean negative log-likelihood of the labels under softmax(outputs), nats per example."""

    name = "nll"

    def compute(self) -> torch.Tensor:
        log_probs, target, _ = self._gathered()
        return torch.nn.functional.nll_loss(log_probs, target)
