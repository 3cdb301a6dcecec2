"""Autoencoder training: fit any model that states its own objective as `loss_terms(x)`.

The model's `loss_terms(batch["x"])` returns a dict with "loss" (what is minimised) and any other
named scalars; each is logged as `<split>/<name>` (`train/loss` per step, the rest per epoch), so a
VAE logs `val/reconstruction` and `val/kl`. `ConvVAE` (components/generative/vae.py) is one such model.
"""

from __future__ import annotations

from typing import Any, Callable

import lightning as L
import torch
from torch import nn

from components.tasks.supervised import log_loss, optimizers_config


class Autoencoding(L.LightningModule):
    """Minimise the model's own `loss_terms(x)["loss"]` over batches {"x": inputs}.

    Args:
        model: An nn.Module with loss_terms(x) -> {"loss": scalar, <name>: scalar, ...}.
        optimizer: Factory called with the parameters.
        scheduler: Learning-rate scheduler factory, or None.
    """

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None) -> None:
        super().__init__()
        if not callable(getattr(model, "loss_terms", None)):
            raise ValueError(f"model must provide loss_terms(x) for autoencoding, got {type(model).__name__} "
                             "(e.g. type: conv_vae)")
        self.model = model
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        terms = self.model.loss_terms(batch["x"])
        size = len(batch["x"])
        log_loss(self, split, terms["loss"], size)
        for name, value in terms.items():
            if name != "loss":
                self.log(f"{split}/{name}", value, on_step=False, on_epoch=True, batch_size=size,
                         sync_dist=split != "train")
        return terms["loss"]

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)
