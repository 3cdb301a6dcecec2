"""Accuracy over the scored positions of a sequence task: targets equal to -100 (torch's default
ignore_index, the "no target here" of `mqar` and of padded LM batches) are skipped.

A torchmetrics.Metric with two sum states (correct, scored), exact under DDP. compute() before any
scored position raises RuntimeError rather than logging a nan that looks like a result.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric

IGNORE = -100


class MaskedAccuracy(Metric):
    """Share of scored positions (target != -100) whose top logit is the target. Outputs are
    logits (N, C), batch["y"] (N,) (the `language_modeling` task flattens positions)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    name = "masked_accuracy"

    def __init__(self) -> None:
        super().__init__()
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("scored", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        target = batch["y"].long().reshape(-1)
        if outputs.ndim != 2 or outputs.shape[0] != target.shape[0]:
            raise ValueError(f"{self.name}: outputs must be logits (N, C) for N = {target.shape[0]} targets, "
                             f"got {tuple(outputs.shape)}")
        keep = target != IGNORE
        self.correct += (outputs.detach()[keep].argmax(dim=1) == target[keep]).sum()
        self.scored += keep.sum()

    def compute(self) -> torch.Tensor:
        if int(self.scored) == 0:
            raise RuntimeError(f"{self.name}: no scored position (target != -100) since the last reset()")
        return self.correct.float() / self.scored
