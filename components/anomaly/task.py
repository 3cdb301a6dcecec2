"""Unsupervised anomaly detection: a detector is fitted on contaminated rows without their labels
and gives every row an anomaly score (higher = more anomalous); the metrics compare the scores
with batch["y"] (1 anomaly) on val and test.

Two tasks:

- `reconstruction_anomaly`: an autoencoder (`model:`, any model whose output has the input's
  shape) is trained to reconstruct x, loss = mean of the per-row scores over the batch; a row's
  score is its reconstruction error, the mean over features of (x_hat - x)^2 (`error: squared`)
  or |x_hat - x| (`error: absolute`). Logged: `<split>/loss`, and per epoch on val and test the
  metrics of the scores plus `<split>/score_normal` and `<split>/score_anomaly` (mean score of
  each group), whose ratio shows whether the anomalies are reconstructed worse.
- `outlier_detector`: a classical detector (`detector:`, the `detectors` kind: sklearn's
  IsolationForest, OneClassSVM) is fitted on the train split's rows at the start of the test
  loop (`phases: [test]`, nothing to train by gradient) and scores the test rows; score =
  -score_samples(x) (sklearn's score is higher for normal rows).
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, Literal

import lightning as L
import numpy as np
import torch
from torch import nn

from components.kinds import Kind
from components.tasks.supervised import log_loss, optimizers_config

Detector = Annotated[Any, Kind("detectors")]


def reconstruction_scores(x_hat: torch.Tensor, x: torch.Tensor, error: str = "squared") -> torch.Tensor:
    """Per-row reconstruction error (N,): mean over features of (x_hat - x)^2 or |x_hat - x|."""
    if x_hat.shape != x.shape:
        raise ValueError(f"the autoencoder's output {tuple(x_hat.shape)} must have the input's shape {tuple(x.shape)}")
    diff = (x_hat - x).flatten(1)
    return (diff * diff if error == "squared" else diff.abs()).mean(dim=1)


class GroupMeans:
    """Sums and counts of one split's scores of normal rows and of anomalies, for their means."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sums, self.counts = [0.0, 0.0], [0, 0]

    def update(self, scores: torch.Tensor, y: torch.Tensor) -> None:
        for group in (0, 1):
            chosen = scores[(y.reshape(-1) > 0) == bool(group)]
            self.sums[group] += float(chosen.sum())
            self.counts[group] += int(chosen.numel())

    def means(self) -> dict[str, float]:
        return {name: self.sums[g] / self.counts[g]
                for g, name in enumerate(("score_normal", "score_anomaly")) if self.counts[g]}


class ReconstructionAnomaly(L.LightningModule):
    """Train an autoencoder on unlabelled rows; its reconstruction error is the anomaly score.

    Args:
        model: The autoencoder (runtime, from `model:`), e.g. an `mlp` with out_features =
            in_features, or that inside `precision_reduced` (LPR).
        optimizer: Factory called with the parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        metrics: name -> metric updated with (scores, batch) on val and test (`anomaly_auroc`, ...).
        error: The per-feature error averaged into a row's score: squared or absolute.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict[str, Any]] | None = None,
        metrics: dict[str, Any] | None = None,
        error: Literal["squared", "absolute"] = "squared",
    ) -> None:
        super().__init__()
        if error not in ("squared", "absolute"):
            raise ValueError(f"error must be 'squared' or 'absolute', got '{error}'")
        self.model, self.error = model, error
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        metrics = metrics or {}
        self.split_metrics = nn.ModuleDict({
            split: nn.ModuleDict({name: metric.clone() for name, metric in metrics.items()}) for split in ("val", "test")
        })
        self.group_means = {"val": GroupMeans(), "test": GroupMeans()}

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        """An autoencoder maps the data's width to itself: the (innermost) model's in_features and
        out_features must equal the data's; keys are dotted below `model` for a wrapped model (the
        builder itself checks a top-level in_features)."""
        width = info.get("in_features")
        prefix, inner = "", model_args
        while isinstance(inner.get("model"), dict):
            prefix, inner = prefix + "model.", inner["model"]
        return [(prefix + key, f"is {inner[key]} but the data has {width} features (an autoencoder "
                 "reconstructs its input)")
                for key in (("in_features",) if prefix else ()) + ("out_features",)
                if width is not None and key in inner and inner[key] != width]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Anomaly scores (N,) of rows x."""
        return reconstruction_scores(self.model(x), x, self.error)

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        scores = self(batch["x"])
        loss = scores.mean()
        log_loss(self, split, loss, len(scores))
        if split != "train":
            for metric in self.split_metrics[split].values():
                metric.update(scores, batch)
            self.group_means[split].update(scores.detach(), batch["y"])
        return loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "test")

    def _log_epoch(self, split: str) -> None:
        for name, metric in self.split_metrics[split].items():
            if metric.update_called:
                self.log(f"{split}/{name}", metric, on_step=False, on_epoch=True)
        for name, value in self.group_means[split].means().items():
            self.log(f"{split}/{name}", value, on_step=False, on_epoch=True)
        self.group_means[split].reset()

    def on_validation_epoch_end(self) -> None:
        self._log_epoch("val")

    def on_test_epoch_end(self) -> None:
        self._log_epoch("test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)


class OutlierDetector(L.LightningModule):
    """Fit a classical detector on the train split's rows, then score the test rows.

    Args:
        detector: An object with fit(X) and score_samples(X) (the `detectors` kind).
        metrics: name -> metric updated with (scores, batch) on test (`anomaly_auroc`, ...).
    """

    def __init__(self, detector: Detector, metrics: dict[str, Any] | None = None) -> None:
        super().__init__()
        missing = [m for m in ("fit", "score_samples") if not callable(getattr(detector, m, None))]
        if missing:
            raise ValueError(f"detector {type(detector).__name__} has no {' or '.join(missing)}()")
        self.detector = detector
        self.test_metrics = nn.ModuleDict({name: metric.clone() for name, metric in (metrics or {}).items()})

    def training_step(self, batch: Any, batch_idx: int) -> None:
        raise RuntimeError("task 'outlier_detector' fits its detector at test time: run it with `phases: [test]`")

    def configure_optimizers(self) -> None:
        return None

    def on_test_start(self) -> None:
        datamodule = self.trainer.datamodule
        if datamodule is None or not hasattr(datamodule, "split"):
            raise RuntimeError("outlier_detector needs an in-memory data module with a train split")
        self.detector.fit(datamodule.split("train")["x"].cpu().numpy())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Anomaly scores (N,) of rows x: -score_samples(x)."""
        scores = -np.asarray(self.detector.score_samples(x.cpu().numpy()), dtype=np.float64)
        return torch.as_tensor(scores, device=x.device)

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        scores = self(batch["x"])
        for metric in self.test_metrics.values():
            metric.update(scores, batch)

    def on_test_epoch_end(self) -> None:
        for name, metric in self.test_metrics.items():
            if metric.update_called:
                self.log(f"test/{name}", metric)
