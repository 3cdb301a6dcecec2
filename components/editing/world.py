"""The frozen world an editor acts in at tiny scale: an autoencoder (the generator whose latent is
edited) and the oracle factor classifier (the judge), trained together on the shapes, and the
task that trains them.

`EditingWorld` holds both; `encode` gives the latent mean (B, D), `decode` an image clamped to
[0, 1] (the VAE's decoder has no output nonlinearity). `world_pretraining` trains the pair: the
autoencoder's own objective (`loss_terms(x)["loss"]`) on the images, plus the oracle's cross-entropy on the
images *and* on their (detached) reconstructions, since the oracle judges decoded images. The
editing specs load the result with `init: {spec: world.yaml, overrides: ['seed=${seed}']}`: one
world per seed.

Logged: `train/loss` per step; `<split>/loss`, `<split>/recon_mse` (mean squared pixel error of the
reconstruction from the latent mean), `<split>/oracle_acc` (mean over factors, on the images) and
`<split>/oracle_acc_recon` (on the reconstructions) per validation / test epoch.
"""

from __future__ import annotations

from typing import Any, Callable

import lightning as L
import torch
from torch import nn

from components.editing.oracle import FactorOracle
from components.kinds import Model
from components.tasks.supervised import log_loss, optimizers_config


class EditingWorld(nn.Module):
    """An autoencoder and a factor oracle (module docstring).

    Args:
        autoencoder: The generator with a vector latent: encode(x) -> (mean, log-variance) (B, D)
            each, decode(z) -> images, loss_terms(x) -> {"loss", ...} (the generative package's
            `conv_vae`).
        oracle: The factor classifier (`factor_oracle`).
    """

    def __init__(self, autoencoder: Model, oracle: Model) -> None:
        super().__init__()
        for name in ("encode", "decode", "loss_terms"):
            if not callable(getattr(autoencoder, name, None)):
                raise ValueError(f"autoencoder must provide {name}(), got {type(autoencoder).__name__}")
        if not isinstance(oracle, FactorOracle):
            raise ValueError(f"oracle must be a factor_oracle, got {type(oracle).__name__}")
        self.autoencoder, self.oracle = autoencoder, oracle

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, D) latent means."""
        return self.autoencoder.encode(images)[0]

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """(B, D) latents -> (B, C, H, W) images in [0, 1]."""
        return self.autoencoder.decode(latents).clamp(0, 1)


class WorldPretraining(L.LightningModule):
    """Train an `editing_world`: autoencoder loss + oracle cross-entropy on images and
    reconstructions (module docstring). Batches {"x": images in [0, 1], "y": (B, 5) factors}.

    Args:
        model: The `editing_world` (runtime, from `model:`).
        optimizer: Factory called with the parameters.
        scheduler: Learning-rate scheduler factory, or None.
    """

    LOGGED_METRICS = ("train/loss", "{split}/loss", "{split}/recon_mse", "{split}/oracle_acc", "{split}/oracle_acc_recon")

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None) -> None:
        super().__init__()
        if not isinstance(model, EditingWorld):
            raise ValueError(f"world_pretraining trains an editing_world, got {type(model).__name__}")
        self.model, self.optimizer_factory, self.scheduler_factory = model, optimizer, scheduler

    def _loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch["x"], batch["y"]
        recon = self.model.decode(self.model.encode(x))
        loss = self.model.autoencoder.loss_terms(x)["loss"] + self.model.oracle.loss(x, y) + self.model.oracle.loss(recon.detach(), y)
        return loss, recon

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, _ = self._loss(batch)
        log_loss(self, "train", loss, len(batch["x"]))
        return loss

    def _evaluate(self, batch: dict[str, torch.Tensor], split: str) -> None:
        loss, recon = self._loss(batch)
        x, y, size = batch["x"], batch["y"], len(batch["x"])
        log_loss(self, split, loss, size)
        values = {"recon_mse": (recon - x).pow(2).mean(),
                  "oracle_acc": (self.model.oracle.predict(x) == y).float().mean(),
                  "oracle_acc_recon": (self.model.oracle.predict(recon) == y).float().mean()}
        for name, value in values.items():
            self.log(f"{split}/{name}", value, on_epoch=True, batch_size=size)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)


