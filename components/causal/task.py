"""Language modeling with every validation and test metric also reported per group of examples
(per query depth in causim: accuracy falls with the number of mechanisms a query needs).

General: any token data module whose batches carry an integer column per example (B,) under
`group_key` can use it; it lives in the causal family until a second family does.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

import torch
from annotated_types import MinLen
from torch import nn

from components.tasks.language_modeling import LanguageModeling
from components.types import NonNegativeInt


class LanguageModelingByGroup(LanguageModeling):
    """`language_modeling`, plus `<split>/<metric>.<group_key>_<g>` for val and test: each metric
    computed on the examples whose batch[group_key] is g, for every g in `groups` (a group with no
    example in the split logs nothing). Positions of an example share its group; outputs and
    targets are restricted to them before the metric's update, so any per-position metric works.

    Args:
        group_key: The batch column (B,) holding each example's group.
        groups: The group values to report (non-negative integers, e.g. query depths).
        Others: as `language_modeling`.
    """

    def __init__(self, model: nn.Module, loss: nn.Module, optimizer: Any, scheduler: Any = None,
                 metrics: dict[str, Any] | None = None, train_metrics: bool = True,
                 log_train_metrics: Literal["interval", "step"] = "interval", group_key: str = "depth",
                 groups: Annotated[list[NonNegativeInt], MinLen(1)] = [1, 2, 3]) -> None:  # noqa: B006 (never mutated)
        super().__init__(model, loss, optimizer, scheduler, metrics, train_metrics, log_train_metrics)
        self.group_key, self.groups = group_key, list(groups)
        # split -> metric -> group -> clone (ModuleDict keys may not hold the dot of the logged name)
        self.group_metrics = nn.ModuleDict({
            f"{split}_metrics": nn.ModuleDict({
                name: nn.ModuleDict({str(g): copy.deepcopy(metric) for g in self.groups})
                for name, metric in (metrics or {}).items()})
            for split in ("val", "test")
        })

    def grouped(self, split: str) -> list[tuple[str, int, Any]]:
        """(metric name, group, metric) for each group metric of the split (none for train)."""
        by_name = self.group_metrics[f"{split}_metrics"] if f"{split}_metrics" in self.group_metrics else {}
        return [(name, int(g), metric) for name, groups in by_name.items() for g, metric in groups.items()]

    def log_step(self, split: str, loss: torch.Tensor, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        super().log_step(split, loss, outputs, batch)
        if split == "train":
            return
        if self.group_key not in batch:
            raise KeyError(f"language_modeling_by_group: the batches have no column {self.group_key!r} "
                           f"(columns: {sorted(batch)})")
        group = batch[self.group_key]
        per_example = outputs.shape[0] // len(group)  # positions per example (language_modeling flattens them)
        position_group = group.repeat_interleave(per_example)
        for _, g, metric in self.grouped(split):
            keep = position_group == g
            if keep.any():
                metric.update(outputs.detach()[keep], {**batch, "y": batch["y"][keep]})

    def log_epoch_metrics(self, split: str) -> None:
        super().log_epoch_metrics(split)
        for name, g, metric in self.grouped(split):
            if metric.update_called:
                self.log(f"{split}/{name}.{self.group_key}_{g}", metric, on_step=False, on_epoch=True)
