"""Generative diffusion tasks: training a denoiser, and sampling from one (no training).

Two paradigms any diffusion paper can reuse:

- `diffusion_training`: the DDPM objective. For a batch {"x", optional "cond"}, draw t uniformly
  and noise eps, form x_t with the model's own noise schedule (`model.noise_scheduler()`, a
  diffusers scheduler with `add_noise`), and regress model(x_t, t, cond) on eps (or on v, or x0,
  per the schedule's `prediction_type`) with a mean squared error. Logs `<split>/loss`.
- `sampling`: no training (`phases: [test]` or `[predict]`). Each batch of prompts is handed to
  a registered sampler (`samplers` table) as sampler(model, batch) -> outputs dict; the metrics
  are updated with (outputs, batch) and logged as `test/<name>`; the first batches' images (and
  masks, when the sampler returns them) are logged to MLflow as image-grid artifacts. Running in
  the Trainer's test/predict loop keeps callbacks, seeding, devices and tracking the same as for a
  training run; `init: {spec: ...}` loads a trained denoiser's weights into `self.model`.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Callable

import lightning as L
import numpy as np
import torch
from torch import nn

from components.kinds import Kind
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeInt

Sampler = Annotated[Any, Kind("samplers")]


class DiffusionTraining(L.LightningModule):
    """Noise-prediction training of a conditional denoiser (Ho et al. 2020, DDPM objective).

    Args:
        model: Called as model(x_t, t, cond) -> prediction; provides `noise_scheduler()`.
        optimizer: Factory called with the parameters.
        scheduler: Learning-rate scheduler factory, or None.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        if not hasattr(model, "noise_scheduler"):
            raise ValueError(f"model must provide noise_scheduler() for diffusion training, got {type(model).__name__}")
        self.model = model
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.noise = model.noise_scheduler()

    def _loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        x0 = batch["x"]
        eps = torch.randn_like(x0)
        steps = self.noise.config.num_train_timesteps
        t = torch.randint(0, steps, (len(x0),), device=x0.device)
        x_t = self.noise.add_noise(x0, eps, t)
        kind = self.noise.config.prediction_type
        if kind == "epsilon":
            target = eps
        elif kind == "v_prediction":
            target = self.noise.get_velocity(x0, eps, t)
        else:
            target = x0
        prediction = self.model(x_t, t, batch.get("cond"))
        return torch.nn.functional.mse_loss(prediction, target)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        log_loss(self, "train", loss, len(batch["x"]))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        log_loss(self, "val", self._loss(batch), len(batch["x"]))

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        log_loss(self, "test", self._loss(batch), len(batch["x"]))

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)


def image_grid(images: torch.Tensor, columns: int = 8, pad: int = 1) -> np.ndarray:
    """(N, C, H, W) in [0, 1] -> one uint8 grid image (rows*H, columns*W, 3)."""
    images = images.detach().float().cpu().clamp(0, 1)
    if images.shape[1] == 1:
        images = images.repeat(1, 3, 1, 1)
    n, _, h, w = images.shape
    columns = max(1, min(columns, n))
    rows = -(-n // columns)
    grid = np.ones((rows * (h + pad) + pad, columns * (w + pad) + pad, 3), dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, columns)
        top, left = pad + r * (h + pad), pad + c * (w + pad)
        grid[top : top + h, left : left + w] = images[i, :3].permute(1, 2, 0).numpy()
    return (grid * 255).round().astype(np.uint8)


def upscale(images: torch.Tensor, min_size: int = 64) -> torch.Tensor:
    """Nearest-neighbour upscaling of tiny images so logged grids are viewable."""
    factor = max(1, min_size // images.shape[-1])
    return images.repeat_interleave(factor, -1).repeat_interleave(factor, -2) if factor > 1 else images


class Sampling(L.LightningModule):
    """Sampling / test-time search with a registered sampler; no training.

    Args:
        model: The denoiser (runtime, from `model:`; trained weights via `init:`), with the
            sampler contract of components/diffusion/sampling.py.
        sampler: The sampler node (`samplers` table), called as sampler(model, batch) -> outputs
            dict ("images" (B, C, H, W) in [0, 1]; "scores", "nfe", "masks", ... as it returns).
        metrics: name -> metric updated with (outputs, batch), logged as `test/<name>`.
        log_images: Log image grids (and masks) of the first `log_batches` batches to MLflow.
        log_batches: How many batches' grids to log.
    """

    def __init__(
        self,
        model: nn.Module,
        sampler: Sampler,
        metrics: dict[str, Any] | None = None,
        log_images: bool = True,
        log_batches: NonNegativeInt = 1,
    ) -> None:
        super().__init__()
        if not callable(sampler):
            raise ValueError(f"sampler must be callable as sampler(model, batch), got {type(sampler).__name__}")
        self.model, self.sampler = model, sampler
        self.test_metrics = nn.ModuleDict({k: copy.deepcopy(m) for k, m in (metrics or {}).items()})
        self.log_images, self.log_batches = log_images, log_batches

    def training_step(self, batch: Any, batch_idx: int) -> None:
        raise RuntimeError("task 'sampling' does not train: run it with `phases: [test]` (or [predict])")

    def configure_optimizers(self) -> None:
        return None

    def _sample(self, batch: Any, batch_idx: int, split: str) -> dict[str, Any]:
        outputs = self.sampler(self.model, batch)
        if self.log_images and batch_idx < self.log_batches:
            self._log_grids(outputs, f"{split}_batch{batch_idx}")
        return outputs

    def test_step(self, batch: Any, batch_idx: int) -> None:
        outputs = self._sample(batch, batch_idx, "test")
        size = len(outputs["images"]) if "images" in outputs else 1
        for name, metric in self.test_metrics.items():
            metric.update(outputs, batch)
            self.log(f"test/{name}", metric, on_step=False, on_epoch=True, batch_size=size)

    def predict_step(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        return self._sample(batch, batch_idx, "predict")

    def _log_grids(self, outputs: dict[str, Any], prefix: str) -> None:
        """Image grids to the MLflow run of the Lightning logger (nothing without one)."""
        logger = self.logger
        experiment, run_id = getattr(logger, "experiment", None), getattr(logger, "run_id", None)
        if experiment is None or run_id is None or not hasattr(experiment, "log_image"):
            return
        for key in ("initial_images", "images", "masks"):
            value = outputs.get(key)
            if isinstance(value, torch.Tensor) and value.ndim == 4:
                experiment.log_image(run_id, image_grid(upscale(value.float())), artifact_file=f"samples/{prefix}_{key}.png")
