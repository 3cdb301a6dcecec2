"""Tasks whose fit is a plain loop, not gradient training: algorithm studies and online learning.

Lightning still drives the run (seeding, the MLflow logger, `trainer.max_steps`, the test phase),
but no loss is back-propagated: each training batch is handed to the task's `advance(batch, t)`,
which runs one step of the loop (one minimax iteration, one block of an online stream) under
`torch.no_grad()`. An `IterationStep` adapter stands in for the optimizer so that Lightning counts
those steps: `global_step`, `trainer.max_steps` and the step of logged metrics count loop steps.
Used by `minimax` (perturbed_eg) and `online_identification` (drift_sysid).
"""

from __future__ import annotations

import math
from typing import Any

import lightning as L
import numpy as np
import torch


class IterationStep(torch.optim.Optimizer):
    """Adapter that lets Lightning count a plain loop's steps as optimizer steps, so that
    `global_step`, `trainer.max_steps` and the step of logged metrics are the step count.
    Its param group's `lr` is the loop's current step size (what `lr_monitor` would show)."""

    def __init__(self, tensors: list[torch.Tensor]) -> None:
        super().__init__(tensors, {"lr": 0.0})

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        return closure() if closure is not None else None


class PlainLoop(L.LightningModule):
    """Base of a task whose fit is a plain loop (module docstring). Manual optimization; a
    subclass implements `advance(batch, t)` (step t, 0-based; no gradients) and `loop_tensors()`
    (the state the adapter holds, at least one tensor that exists before fit), and may override
    `step_size(t)` (shown as the adapter's lr) and `after_advance(done)` (logging after step
    `done` = t + 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False

    def loop_tensors(self) -> list[torch.Tensor]:
        raise NotImplementedError(f"{type(self).__name__} must say which tensors hold its loop state")

    def advance(self, batch: Any, t: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement advance(batch, t)")

    def step_size(self, t: int) -> float:
        return 0.0

    def after_advance(self, done: int) -> None:
        return None

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return IterationStep(self.loop_tensors())

    def _advance(self, batch: Any, t: int) -> None:
        with torch.no_grad():
            self.advance(batch, t)

    def training_step(self, batch: Any, batch_idx: int) -> None:
        optimizer = self.optimizers()
        t = self.trainer.global_step  # loop steps completed so far
        optimizer.param_groups[0]["lr"] = self.step_size(t)
        optimizer.step(closure=lambda: self._advance(batch, t))
        self.after_advance(t + 1)


def log_points(horizon: int, per_decade: int) -> list[int]:
    """Iterations 1 <= t <= horizon, about `per_decade` per decade on a log scale, plus horizon."""
    count = int(math.floor(per_decade * math.log10(horizon))) + 1
    points = {int(round(10 ** (k / per_decade))) for k in range(count)}
    return sorted(p for p in points | {horizon} if 1 <= p <= horizon)


def log_log_slope(steps: list[int], gaps: list[float], window: float) -> float | None:
    """Slope of log(gap) against log(t) over t >= T^(1 - window), T = the last step; all points
    when fewer than 2 fall in the window; None with fewer than 2 positive gaps."""
    pairs = [(t, g) for t, g in zip(steps, gaps) if g > 0]
    if len(pairs) < 2:
        return None
    start = pairs[-1][0] ** (1.0 - window)
    inside = [(t, g) for t, g in pairs if t >= start]
    if len(inside) < 2:
        inside = pairs
    t, g = np.log([p[0] for p in inside]), np.log([p[1] for p in inside])
    return float(np.polyfit(t, g, 1)[0])
