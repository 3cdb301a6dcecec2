"""The coordinate check of muP (Yang et al. 2022, "Tensor Programs V", section D.1): how big the
per-coordinate change of each layer's output is after a few training steps, as a function of width.

Under a parametrization that transfers, a layer's output coordinates move by the same amount at
every width; under SP with Adam they move more the wider the model (the readout by ~width). The
callback measures, on one fixed probe batch (the first training batch),

    delta_rms(module, step) = RMS(module output after `step` updates - module output at init)

for every sequence mixer (`blocks.<i>.mixer`) and for the model's logits, and logs them as
`coord/delta_rms.blocks.<i>.mixer` and `coord/delta_rms.logits` once `steps` optimizer updates
are done. A sweep over width then gives the slope of log delta_rms against log width (claim
function `loglog_slope`): ~0 where the coordinates are width-independent.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch import nn

from components.types import PositiveInt


def delta_rms(now: torch.Tensor, start: torch.Tensor) -> float:
    """Root mean square of now - start over all coordinates."""
    return float((now - start).double().pow(2).mean().sqrt())


def probe_outputs(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The outputs of every `blocks.<i>.mixer` and the logits of `model(x)`, computed without
    gradients in eval mode (the mode is restored)."""
    outputs: dict[str, torch.Tensor] = {}
    handles = [module.register_forward_hook(lambda _m, _i, out, key=name: outputs.__setitem__(key, out.detach()))
               for name, module in model.named_modules() if name.startswith("blocks.") and name.endswith(".mixer")]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            outputs["logits"] = model(x).detach()
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return outputs


class CoordinateCheck(L.Callback):
    """Logs `coord/delta_rms.<module>` after `steps` optimizer updates (module docstring), to the
    run's loggers at once and to the run's final metrics. The task's model is `pl_module.model`,
    called on the batch's "x".

    Args:
        steps: Optimizer updates after which the change from init is measured.
    """

    def __init__(self, steps: PositiveInt = 4) -> None:
        self.steps = steps
        self._probe: torch.Tensor | None = None
        self._start: dict[str, torch.Tensor] = {}

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch: Any,
                             batch_idx: int) -> None:
        if self._probe is None:
            self._probe = batch["x"].detach().clone()
            self._start = probe_outputs(pl_module.model, self._probe)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.global_step != self.steps or self._probe is None:
            return
        now = probe_outputs(pl_module.model, self._probe)
        values = {f"coord/delta_rms.{name}": delta_rms(value, self._start[name]) for name, value in now.items()}
        # Sent to the loggers now, not at Lightning's next logging interval (`steps` need not be one);
        # into callback_metrics (the run's final metrics) without a second copy to the loggers.
        for logger in trainer.loggers:
            logger.log_metrics(values, step=trainer.global_step)
        for key, value in values.items():
            pl_module.log(key, value, on_step=True, on_epoch=False, logger=False)
