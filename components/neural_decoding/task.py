"""`behavior_decoding`: train a behaviour decoder on a mixture of paired (neural + behaviour) and
unpaired (behaviour-only) batches, then decode held-out trials from their neural activity (beemo).

Training step: the decoder (`behavior_decoder`) reads the batch's behaviour shifted by one step
(zeros first; plus N(0, `input_noise`^2) noise on the read copy, which keeps the model from copying
its input and makes it use the neural tokens) and predicts every step's behaviour; loss: mean
squared error. A paired batch gives the decoder its spikes and session (cross-attention on), an
unpaired batch does not (cross-attention skipped). Which batch is which is the data module's
mixture (`reach_sessions`: `paired_fraction`, `pretrain_steps`); every arm takes the same steps.

Decoding (test, on the data module's whole val and test splits): the decoder rolls out from rest,
each step reading its own previous predictions and the trial's spikes (no true behaviour is
seen). Logged, for split in val/test:
- `<split>/r2`: R^2 of the decoded velocity (1 - SSE / SST per behaviour dimension, averaged over
  dimensions, SST around the split's mean: predicting the mean velocity scores 0);
- `<split>/r2_prior`: the same rollout without neural input (the behaviour prior alone: a floor);
- `<split>/r2_teacher`: one-step predictions with the true past behaviour and the spikes.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import lightning as L
import torch
import torch.nn.functional as F

from components.kinds import Model
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeFloat


def velocity_r2(prediction: torch.Tensor, target: torch.Tensor) -> float:
    """1 - SSE / SST per behaviour dimension (last axis), averaged over dimensions."""
    flat_p, flat_t = prediction.reshape(-1, target.shape[-1]), target.reshape(-1, target.shape[-1])
    sse = (flat_p - flat_t).pow(2).sum(0)
    sst = (flat_t - flat_t.mean(0)).pow(2).sum(0).clamp_min(1e-12)
    return float((1 - sse / sst).mean())


def shifted(behavior: torch.Tensor) -> torch.Tensor:
    """The previous step's behaviour at every position (zeros at the first)."""
    return F.pad(behavior, (0, 0, 1, 0))[:, :-1]


@torch.no_grad()
def rollout(model: Any, steps: int, channels: int, spikes: torch.Tensor | None,
            session: torch.Tensor | None, batch: int) -> torch.Tensor:
    """Autoregressive decoding from rest: step t reads the decoder's own predictions of steps < t."""
    inputs = torch.zeros(batch, steps, channels, device=model.head.weight.device)
    for t in range(steps):
        prediction = model(inputs[:, : t + 1], spikes, session)
        if t + 1 < steps:
            inputs[:, t + 1] = prediction[:, t]
    return model(inputs, spikes, session)


class BehaviorDecoding(L.LightningModule):
    """Mixed paired/unpaired training and rollout decoding (module docstring).

    Args:
        model: The behaviour decoder (`behavior_decoder`).
        optimizer: Factory called with the model's parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        input_noise: Standard deviation of the noise on the decoder's behaviour input in training.
    """

    def __init__(self, model: Model, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None,
                 input_noise: NonNegativeFloat = 0.3) -> None:
        super().__init__()
        for attr in ("neural_tokens", "channels", "sessions", "max_units"):
            if not hasattr(model, attr):
                raise TypeError(f"behavior_decoding needs a behaviour decoder (behavior_decoder), got {type(model).__name__}")
        self.model, self.optimizer_factory, self.scheduler_factory = model, optimizer, scheduler
        self.input_noise = input_noise

    def setup(self, stage: str) -> None:
        warnings.filterwarnings("ignore", message=r".*`validation_step`.*")
        data = getattr(self.trainer, "datamodule", None)
        if data is None or not hasattr(data, "split"):
            raise RuntimeError("behavior_decoding needs a data module with split() (reach_sessions, nwb_reaches)")
        info = data.info()
        if info["sessions"] > self.model.sessions or info["max_units"] > self.model.max_units:
            raise ValueError(f"the decoder has {self.model.sessions} sessions x {self.model.max_units} units, "
                             f"the data {info['sessions']} x {info['max_units']}")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.model.parameters())

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        behavior = batch["behavior"].float()
        inputs = shifted(behavior)
        if self.input_noise > 0:
            inputs = inputs + self.input_noise * torch.randn_like(inputs)
        paired = "spikes" in batch
        prediction = self.model(inputs, batch["spikes"] if paired else None, batch.get("session"))
        loss = F.mse_loss(prediction, behavior)
        self.log(f"train/loss_{'paired' if paired else 'unpaired'}", loss, on_step=True, on_epoch=False,
                 batch_size=len(behavior))
        log_loss(self, "train", loss, len(behavior))
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> None:
        pass  # decoding is scored on whole splits at the end of the test epoch

    @torch.no_grad()
    def on_test_epoch_end(self) -> None:
        data = self.trainer.datamodule
        for split in ("val", "test"):
            part = {k: v.to(self.device) for k, v in data.split(split).items()}
            behavior = part["behavior"].float()
            n, steps, channels = behavior.shape
            decoded = rollout(self.model, steps, channels, part["spikes"], part["session"], n)
            prior = rollout(self.model, steps, channels, None, None, n)
            teacher = self.model(shifted(behavior), part["spikes"], part["session"])
            self.log(f"{split}/r2", velocity_r2(decoded, behavior))
            self.log(f"{split}/r2_prior", velocity_r2(prior, behavior))
            self.log(f"{split}/r2_teacher", velocity_r2(teacher, behavior))
