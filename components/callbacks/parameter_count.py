"""Logs the model's number of trainable parameters as a metric, so that claims and `exp compare`
can read it like any result (e.g. that every split of a parameter budget spends it exactly)."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import Callback


def trainable_parameters(module: Any) -> int:
    """Elements of the parameters with requires_grad (each shared tensor counted once)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


class ParameterCount(Callback):
    """Logs `model/trainable_parameters`: the trainable parameters of the task's `model` (the
    whole task module when it has none), at the end of every training and test epoch."""

    KEY = "model/trainable_parameters"

    def _log(self, pl_module: Any) -> None:
        model = getattr(pl_module, "model", pl_module)
        pl_module.log(self.KEY, float(trainable_parameters(model)), on_step=False, on_epoch=True)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._log(pl_module)

    def on_test_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._log(pl_module)
