"""Lightning's LearningRateMonitor, logging under this project's `split/name` metric keys.

Lightning names the values `lr-AdamW`, `lr-AdamW/pg2`, `lr-AdamW-momentum`, `lr-SGD-1`; these
are logged as `train/lr`, `train/lr.pg2`, `train/momentum`, `train/lr.1` (see `metric_key`), so
they sort with the run's other train metrics in MLflow and read like every other key.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from lightning.pytorch.callbacks import LearningRateMonitor as LightningMonitor

_LIGHTNING_KEY = re.compile(r"lr-[A-Za-z_][A-Za-z0-9_]*?(?:-(?P<index>\d+))?(?P<group>/[^-]+)?"
                            r"(?:-(?P<stat>momentum|weight_decay))?")


def metric_key(name: str) -> str:
    """`lr-AdamW` -> `train/lr`; `lr-AdamW-1/pg2-momentum` -> `train/momentum.1.pg2`. A name
    Lightning did not make (a scheduler config's own `name`) is kept, under `train/`."""
    match = _LIGHTNING_KEY.fullmatch(name)
    if match is None:
        return name if name.startswith("train/") else f"train/{name}"
    parts = [match["stat"] or "lr", match["index"], (match["group"] or "").lstrip("/") or None]
    return "train/" + ".".join(p for p in parts if p)


class LearningRateMonitor(LightningMonitor):
    """Logs each optimizer's learning rate (and with the options its momentum and weight decay)
    as `train/lr` (see the module docstring).

    Args:
        logging_interval: "step" or "epoch"; None logs at each scheduler's own interval.
        log_momentum: Also log the momentum (Adam's beta1) as `train/momentum`.
        log_weight_decay: Also log the weight decay as `train/weight_decay`.
    """

    def _extract_stats(self, trainer: Any, interval: str) -> dict[str, float]:
        stats = super()._extract_stats(trainer, interval)
        for name in stats:  # Lightning put them under its own names too
            trainer.callback_metrics.pop(name, None)
        renamed = {metric_key(name): value for name, value in stats.items()}
        trainer.callback_metrics.update({k: torch.tensor(v, device=trainer.strategy.root_device)
                                         for k, v in renamed.items()})
        return renamed
