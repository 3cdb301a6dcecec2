"""Learning-rate schedule factories.

Registered as factories: the spec gives the keyword arguments, and the task calls
scheduler(optimizer, total_steps) with the runtime arguments. `total_steps` is the number of
scheduler steps in the whole run (optimizer steps for interval 'step', epochs for 'epoch'),
which only the task knows. Each returns Lightning's lr-scheduler config
{"scheduler": ..., "interval": ...}.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from annotated_types import Interval
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR, StepLR
from components.types import NonNegativeInt, PositiveInt, Probability

INTERVALS = ("step", "epoch")


def _check_common(total_steps: int, interval: str) -> None:
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of ['step', 'epoch'], got '{interval}'")


def cosine_with_warmup(
    optimizer: Optimizer,
    total_steps: int,
    warmup_steps: NonNegativeInt = 0,
    min_lr_ratio: Probability = 0.0,
    interval: Literal["step", "epoch"] = "step",
) -> dict[str, Any]:
    """Linear warmup from 0, then a half cosine from the base lr down to min_lr_ratio * lr.

    The factor at scheduler step t (t = 0 before the first step) is t / warmup_steps during
    warmup (the convention of Hugging Face's get_cosine_schedule_with_warmup, so the first
    update uses lr 0 when warming up), then
    min_lr_ratio + (1 - min_lr_ratio) * (1 + cos(pi * p)) / 2 with
    p = (t - warmup_steps) / (total_steps - warmup_steps), held at min_lr_ratio for t >= total_steps.

    Args:
        optimizer: Runtime: the optimizer whose lr is scheduled.
        total_steps: Runtime: scheduler steps in the run, supplied by the task.
        warmup_steps: Scheduler steps of linear warmup, in [0, total_steps].
        min_lr_ratio: Final lr as a fraction of the base lr, in [0, 1].
        interval: Step the schedule every optimizer 'step' or every 'epoch'.
    """
    _check_common(total_steps, interval)
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}], got {warmup_steps}")

    def factor(step: int) -> float:
        if step < warmup_steps:
            return step / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return {"scheduler": LambdaLR(optimizer, factor), "interval": interval}


def step_decay(
    optimizer: Optimizer,
    total_steps: int,
    step_size: PositiveInt,
    gamma: Annotated[float, Interval(gt=0, le=1)] = 0.1,
    interval: Literal["step", "epoch"] = "epoch",
) -> dict[str, Any]:
    """Multiply the lr by `gamma` every `step_size` scheduler steps (torch StepLR).

    Args:
        optimizer: Runtime: the optimizer whose lr is scheduled.
        total_steps: Runtime: scheduler steps in the run; unused by this schedule beyond a check.
        step_size: Scheduler steps between decays, >= 1.
        gamma: Multiplicative decay factor, in (0, 1].
        interval: Step the schedule every optimizer 'step' or every 'epoch'.
    """
    _check_common(total_steps, interval)
    return {"scheduler": StepLR(optimizer, step_size=step_size, gamma=gamma), "interval": interval}
