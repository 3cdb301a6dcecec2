"""Standard metrics as torchmetrics adapters for the metric contract: update(outputs, batch).

Design: each class subclasses torchmetrics.Metric directly and keeps what it needs per example
(hard labels, or probabilities for AUROC) in list states with dist_reduce_fx="cat"; compute()
calls torchmetrics.functional on everything gathered. This is exact under DDP (states are
concatenated across processes before compute) and needs no number of classes at construction:
the class count comes from the outputs' width at the first update (one column = a single binary
logit, i.e. 2 classes; C >= 2 columns = C-way logits), is kept as a "max"-reduced state so
gathered processes agree, and a later update with another width is a ValueError. The memory
cost is one label (or one probability row for AUROC) per example since the last reset(),
which Lightning does every epoch.

compute() before any update() raises RuntimeError, rather than logging a nan that looks like a
result.

Outputs are raw model outputs: logits (N, C) for C-way classification, a single logit (N, 1) or
(N,) for binary, predictions (N, 1), (N,) or (N, T) for regression. Targets are batch["y"].
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import torch
from torchmetrics import Metric, regression
from torchmetrics.functional.classification import (
    binary_auroc,
    multiclass_accuracy,
    multiclass_auroc,
    multiclass_f1_score,
)
from torchmetrics.utilities import dim_zero_cat

AVERAGES = ("micro", "macro")


def _check_average(average: str) -> str:
    if average not in AVERAGES:
        raise ValueError(f"average must be one of ['micro', 'macro'], got '{average}'")
    return average


class ClassificationMetric(Metric):
    """Stores one row per example (see `_rows`) and the class count inferred from the outputs."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    name = "classification_metric"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("rows", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")
        self.add_state("num_classes", default=torch.tensor(0), dist_reduce_fx="max")
        # Kept across reset(): the model's output width does not change between epochs.
        self._width: int | None = None

    def _rows(self, outputs: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        if outputs.ndim not in (1, 2):
            raise ValueError(
                f"{self.name}: outputs must be logits of shape (N, C) or (N,), got {tuple(outputs.shape)}"
            )
        width = 1 if outputs.ndim == 1 else int(outputs.shape[1])
        if self._width is None:
            self._width = width
        elif width != self._width:
            raise ValueError(
                f"{self.name}: outputs have {width} columns, but earlier updates had {self._width}"
            )
        target = batch["y"].long().reshape(-1)
        if target.shape[0] != outputs.shape[0]:
            raise ValueError(
                f"{self.name}: {outputs.shape[0]} outputs but {target.shape[0]} targets in batch['y']"
            )
        self.num_classes.fill_(max(2, width))
        self.rows.append(self._rows(outputs.detach().float()))
        self.target.append(target)

    def _gathered(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        if isinstance(self.target, list) and len(self.target) == 0:
            raise RuntimeError(f"{self.name}: compute() called before any update() since the last reset()")
        return dim_zero_cat(self.rows), dim_zero_cat(self.target), int(self.num_classes)


def _hard_labels(outputs: torch.Tensor) -> torch.Tensor:
    if outputs.ndim == 1 or outputs.shape[1] == 1:
        return (outputs.reshape(-1) > 0).long()
    return outputs.argmax(dim=1)


class _HardLabelScore(ClassificationMetric):
    """A score of the hard labels (top class, or logit > 0 for one output column): one
    torchmetrics.functional call, `score`, with the subclass's `average`."""

    score: Callable[..., torch.Tensor]

    def __init__(self, average: Literal["micro", "macro"]) -> None:
        super().__init__()
        self.average = _check_average(average)

    def _rows(self, outputs: torch.Tensor) -> torch.Tensor:
        return _hard_labels(outputs)

    def compute(self) -> torch.Tensor:
        preds, target, num_classes = self._gathered()
        return self.score(preds, target, num_classes=num_classes, average=self.average)


class Accuracy(_HardLabelScore):
    """Share of examples whose top class (or logit > 0, for one output column) equals y.

    Args:
        average: 'micro' for the plain share correct; 'macro' for the mean of per-class recalls
            (balanced accuracy).
    """

    name = "accuracy"
    score = staticmethod(multiclass_accuracy)

    def __init__(self, average: Literal["micro", "macro"] = "micro") -> None:
        super().__init__(average)


class F1(_HardLabelScore):
    """F1 score of the top class (or logit > 0, for one output column).

    Binary outputs count as two classes, so 'macro' averages the F1 of class 0 and class 1
    (sklearn's f1_score(average='macro')), not the F1 of the positive class alone.

    Args:
        average: 'macro' for the unweighted mean of per-class F1 over classes that occur in
            targets or predictions; 'micro' for F1 of pooled counts (equal to accuracy).
    """

    name = "f1"
    score = staticmethod(multiclass_f1_score)

    def __init__(self, average: Literal["micro", "macro"] = "macro") -> None:
        super().__init__(average)


class AUROC(ClassificationMetric):
    """Area under the ROC curve of predicted probabilities.

    Binary (one or two output columns): the probability of class 1, sigmoid of the single logit
    or softmax(logits)[:, 1]. Multiclass (C > 2 columns): softmax, one-vs-rest AUROC per class,
    macro-averaged (sklearn's roc_auc_score(multi_class='ovr', average='macro')).
    """

    name = "auroc"

    def __init__(self) -> None:
        super().__init__()

    def _rows(self, outputs: torch.Tensor) -> torch.Tensor:
        if outputs.ndim == 1 or outputs.shape[1] == 1:
            return torch.sigmoid(outputs.reshape(-1))
        probs = outputs.softmax(dim=1)
        return probs[:, 1] if outputs.shape[1] == 2 else probs

    def compute(self) -> torch.Tensor:
        probs, target, num_classes = self._gathered()
        if num_classes == 2:
            return binary_auroc(probs, target)
        return multiclass_auroc(probs, target, num_classes=num_classes, average="macro")


class MeanSquaredError(Metric):
    """Mean squared error of predictions against float targets, over all examples and targets.

    Outputs (N, 1) are matched to targets (N,); other shapes must equal the targets' shape.
    """

    is_differentiable = True
    higher_is_better = False
    full_state_update = False
    name = "mse"

    def __init__(self) -> None:
        super().__init__()
        # float32, not float64: Apple's MPS backend has no float64.
        self.add_state("sum_squared_error", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        y = batch["y"]
        if outputs.shape != y.shape:
            if outputs.numel() != y.numel() or outputs.shape[0] != y.shape[0]:
                raise ValueError(
                    f"{self.name}: outputs of shape {tuple(outputs.shape)} do not match targets of "
                    f"shape {tuple(y.shape)}"
                )
            outputs = outputs.reshape(y.shape)
        error = outputs.detach().float() - y.float()
        self.sum_squared_error += (error * error).sum()
        self.count += y.numel()

    def compute(self) -> torch.Tensor:
        if int(self.count) == 0:
            raise RuntimeError(f"{self.name}: compute() called before any update() since the last reset()")
        return self.sum_squared_error / self.count


def _flat(outputs: torch.Tensor, y: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Predictions and float targets as matching 1-D tensors (every example and target pooled)."""
    if outputs.numel() != y.numel() or outputs.shape[0] != y.shape[0]:
        raise ValueError(f"{name}: outputs of shape {tuple(outputs.shape)} do not match targets of shape {tuple(y.shape)}")
    return outputs.detach().float().reshape(-1), y.float().reshape(-1)


class MeanAbsoluteError(regression.MeanAbsoluteError):
    """Mean absolute error of predictions against float targets, over all examples and targets
    (torchmetrics' MeanAbsoluteError)."""

    name = "mae"

    def __init__(self) -> None:  # values are pooled into one output: no torchmetrics arguments
        super().__init__()

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:  # type: ignore[override]
        super().update(*_flat(outputs, batch["y"], self.name))


class RootMeanSquaredError(regression.MeanSquaredError):
    """Root of the mean squared error over all examples and targets (torchmetrics'
    MeanSquaredError with squared=False): in the target's units."""

    name = "rmse"

    def __init__(self) -> None:
        super().__init__(squared=False)

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:  # type: ignore[override]
        super().update(*_flat(outputs, batch["y"], self.name))


class R2Score(regression.R2Score):
    """Coefficient of determination R^2 = 1 - SSE / SST over all examples and targets pooled
    (torchmetrics' R2Score); 1 is perfect, 0 is predicting the mean, negative is worse."""

    name = "r2"

    def __init__(self) -> None:  # values are pooled into one output: no torchmetrics arguments
        super().__init__()

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:  # type: ignore[override]
        super().update(*_flat(outputs, batch["y"], self.name))
