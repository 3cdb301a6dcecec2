"""Supervised fit: outputs = model(batch["x"]); loss(outputs, batch); metrics per split.

Logged keys: `train/loss` per step; `<split>/loss`, `<split>/<metric>` per epoch for train, val and
test; for a loss with named terms (`weighted_sum`), `<split>/loss.<term>` too.

Cadence of the metrics (`log_step`, `log_epoch_metrics`): each step only updates the split's metrics (torchmetrics
`update`, cheap); the value is computed when it is logged. Val and test metrics are logged once,
at epoch end. Train metrics are logged at Lightning's logging interval (`trainer.log_every_n_steps`):
the value over the epoch's training batches so far, under `train/<metric>`; and at epoch end the
whole epoch's value under the same key (so its last value in an epoch is the epoch's). With
`log_train_metrics: step` each training batch's own value is also computed on every step and logged
as `train/<metric>_step` (Lightning sends on-step values to the logger at its logging interval: set
`trainer.log_every_n_steps: 1` to record every step). Logging the metric object on every step
instead costs Lightning a walk over all of its states per step: O(steps^2) per epoch for metrics
that keep a row per example (accuracy, AUROC).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Callable, Literal

import lightning as L
import torch
from torch import nn


def scheduler_interval(factory: Callable[..., Any]) -> str:
    """The `interval` a scheduler factory (a functools.partial) will use: given or default."""
    keywords = getattr(factory, "keywords", {})
    if "interval" in keywords:
        return keywords["interval"]
    func = getattr(factory, "func", factory)
    param = inspect.signature(func).parameters.get("interval")
    return "step" if param is None or param.default is param.empty else param.default


def base_hyperparameter(optimizer: Callable[..., Any], name: str) -> float | None:
    """The value an optimizer factory (a functools.partial) gives `name` (e.g. lr): set in the spec,
    else the optimizer's default, else None."""
    keywords = getattr(optimizer, "keywords", {})
    if name in keywords:
        return keywords[name]
    param = inspect.signature(getattr(optimizer, "func", optimizer)).parameters.get(name)
    return None if param is None or param.default is param.empty else param.default


def scaled_groups(groups: list[dict[str, Any]], optimizer: Callable[..., Any]) -> list[dict[str, Any]]:
    """torch parameter groups from a model's `parameter_groups()`: each entry {"params": [...],
    "lr_scale": s, "weight_decay_scale": w, ...} becomes a group whose lr is the optimizer's lr x s
    (and weight_decay x w); other keys pass through (e.g. "name"). This is how width
    parametrizations (muP and its relatives) give each tensor its own learning rate while the spec
    keeps one `optimizer.lr` to sweep. Every trainable parameter must be in exactly one group."""
    scaled = []
    for group in groups:
        group = dict(group)
        for key, name in (("lr_scale", "lr"), ("weight_decay_scale", "weight_decay")):
            if key in group:
                base = base_hyperparameter(optimizer, name)
                if base is None:
                    raise ValueError(f"parameter group {group.get('name', len(scaled))!r} sets {key} but the "
                                     f"optimizer has no {name}")
                group[name] = base * group.pop(key)
        scaled.append(group)
    return scaled


def optimizers_config(
    module: L.LightningModule,
    optimizer: Callable[..., torch.optim.Optimizer],
    scheduler: Callable[..., dict[str, Any]] | None,
    parameters: Any = None,
) -> Any:
    """What `configure_optimizers` returns for the optimizer and scheduler factories of a spec:
    the scheduler gets its total number of steps at its own interval (optimizer steps or epochs).
    Parameters: `parameters` when given, else the task's model's `parameter_groups()` when it
    defines one (`scaled_groups`), else all of the module's parameters."""
    if parameters is None:
        groups = getattr(getattr(module, "model", None), "parameter_groups", None)
        parameters = scaled_groups(groups(), optimizer) if callable(groups) else module.parameters()
    built = optimizer(parameters)
    if scheduler is None:
        return built
    if scheduler_interval(scheduler) == "step":
        total = int(module.trainer.estimated_stepping_batches)
    else:
        total = int(module.trainer.max_epochs or 1)
    return {"optimizer": built, "lr_scheduler": scheduler(built, total_steps=total)}


def log_loss(module: L.LightningModule, split: str, loss: torch.Tensor, batch_size: int) -> None:
    """`train/loss` per step (on the progress bar); `val/loss` and `test/loss` per epoch, averaged
    over DDP ranks (val on the progress bar). Every task that logs a loss logs it this way."""
    if split == "train":
        module.log("train/loss", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=batch_size)
    else:
        module.log(f"{split}/loss", loss, on_epoch=True, prog_bar=split == "val", batch_size=batch_size,
                   sync_dist=True)


def at_logging_step(module: L.LightningModule) -> bool:
    """Whether Lightning sends this training step's on-step values to the loggers: every
    `trainer.log_every_n_steps` batches that stepped the optimizer, and when the trainer stops.
    Lightning's own rule, read where its callbacks read it (LearningRateMonitor, ThroughputMonitor)."""
    return module.trainer._logger_connector.should_update_logs


class Supervised(L.LightningModule):
    """Base of the supervised tasks; subclasses say which data sizes must match the model.

    Args:
        model: The network (built by the builder from `model:`).
        loss: Called as loss(outputs, batch) -> scalar.
        optimizer: Factory called with the parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        metrics: name -> metric with update(outputs, batch); cloned for train, val and test.
        train_metrics: Also compute the metrics on the training batches.
        log_train_metrics: "interval": train metrics are logged at Lightning's logging interval
            (over the epoch so far) and at epoch end; "step": each training batch's own value is
            also computed every step and logged as `train/<metric>_step` (see the module docstring).
    """

    def __init__(
        self,
        model: nn.Module,
        loss: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict[str, Any]] | None = None,
        metrics: dict[str, Any] | None = None,
        train_metrics: bool = True,
        log_train_metrics: Literal["interval", "step"] = "interval",
    ) -> None:
        super().__init__()
        if log_train_metrics not in ("interval", "step"):
            raise ValueError(f"log_train_metrics must be 'interval' or 'step', got {log_train_metrics!r}")
        self.log_train_metrics = log_train_metrics
        self.model, self.loss = model, loss
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        metrics = metrics or {}
        # One clone per split; ModuleDict keys may not shadow nn.Module attributes such as `train`.
        self.split_metrics = nn.ModuleDict({
            f"{split}_metrics": nn.ModuleDict({k: copy.deepcopy(m) for k, m in metrics.items()})
            for split in (("train", "val", "test") if train_metrics else ("val", "test"))
        })

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        """(model argument, message) for each size the data reports that the spec contradicts."""
        return []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        outputs = self.model(batch["x"])
        loss = self.loss(outputs, batch)
        self.log_step(split, loss, outputs, batch)
        return loss

    def log_step(self, split: str, loss: torch.Tensor, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        """Log a step as the module docstring says: the loss, its named terms, and the split's
        metrics updated with (outputs, batch). Subclasses that reshape outputs call it too."""
        size = len(batch["x"])
        log_loss(self, split, loss, size)
        for term, value in getattr(self.loss, "last_terms", {}).items():
            self.log(f"{split}/loss.{term}", value, on_step=False, on_epoch=True, batch_size=size,
                     sync_dist=split != "train")  # epoch values are averaged over DDP ranks
        metrics = self.metrics_of(split)
        outputs = outputs.detach()
        for name, metric in metrics.items():
            if split == "train" and self.log_train_metrics == "step":
                # forward: updates the epoch's state and returns this batch's own value
                self.log(f"train/{name}_step", metric(outputs, batch), on_step=True, on_epoch=False, batch_size=size)
            else:
                metric.update(outputs, batch)
        if split == "train" and metrics and at_logging_step(self):
            for name, metric in metrics.items():
                self.log(f"train/{name}", metric.compute(), on_step=True, on_epoch=False, batch_size=size)

    def metrics_of(self, split: str) -> dict[str, Any]:
        """The split's metrics (none for train with `train_metrics: false`)."""
        return dict(self.split_metrics[f"{split}_metrics"]) if f"{split}_metrics" in self.split_metrics else {}

    def log_epoch_metrics(self, split: str) -> None:
        """Log the split's metric objects at epoch end: Lightning computes them over the epoch
        (synchronized over DDP ranks by torchmetrics) and resets them for the next epoch. A metric
        with no update this epoch (a split that ran no batch) logs nothing."""
        for name, metric in self.metrics_of(split).items():
            if metric.update_called:
                self.log(f"{split}/{name}", metric, on_step=False, on_epoch=True)

    def on_train_epoch_end(self) -> None:
        self.log_epoch_metrics("train")

    def on_validation_epoch_end(self) -> None:
        self.log_epoch_metrics("val")

    def on_test_epoch_end(self) -> None:
        self.log_epoch_metrics("test")

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)


class Classification(Supervised):
    """Classification: the model's `out_features` must equal the data's number of classes (or be 1
    for two classes with a single-logit loss such as `bce`)."""

    # Every metric key this task logs (the module docstring), for `exp validate` to check a
    # callback's `monitor` without importing torch: {split} is train, val or test, {metric} each
    # metric's type, {term} each named term of the loss. Declared by each class for itself (read
    # from the class, not inherited: a subclass may log more).
    LOGGED_METRICS = ("{split}/loss", "{split}/loss.{term}", "{split}/{metric}", "train/{metric}_step")

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        classes, out = info.get("num_classes"), model_args.get("out_features")
        if classes is None:
            return [("out_features", "the data has no class labels (float targets); use task 'regression'")]
        if out is not None and out != classes and not (classes == 2 and out == 1):
            return [("out_features", f"is {out} but the data has {classes} classes")]
        return []


class Regression(Supervised):
    """Regression: the model's `out_features` must equal the data's number of targets. A spec that
    lists no `metrics` reports DEFAULT_METRICS (MAE, RMSE, R^2; `metrics: []` reports none)."""

    # Filled into the operative spec by `exp validate` (the schema's `x-default-metrics`), so they
    # are in `exp show`, the spec hash and MLflow's params like metrics a spec writes.
    DEFAULT_METRICS = ("mae", "rmse", "r2")

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        targets, out = info.get("num_targets"), model_args.get("out_features")
        if targets is None:
            return [("out_features", "the data has class labels (integer targets); use task 'classification'")]
        if out is not None and out != targets:
            return [("out_features", f"is {out} but the data has {targets} target(s)")]
        return []
