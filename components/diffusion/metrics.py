"""Metrics of sampling runs, for the metric contract update(outputs, batch), where outputs is a
sampler's dict (components/diffusion/sampling.py).

- `nfe`: mean denoiser evaluations per prompt (outputs["nfe"]);
- `verifier_score`: mean verifier score of the returned samples (outputs["scores"]);
- `initial_verifier_score`: mean verifier score of LoTTS's initial samples, before any local
  resampling (outputs["initial_scores"]): the Best-of-`num_initial` score of the same draws;
- `outside_mask_change`: max over everything seen of |x_final - x_start| outside the mask
  (outputs["outside_change"]); 0 when the sampler leaves the unmasked region untouched;
- `mask_iou`: mean IoU of outputs["masks"] against batch["defect_mask"];
- `random_mask_iou`: the same for a random mask with the predicted mask's area (a uniformly random
  subset of positions of the same size), the chance baseline of `mask_iou`.
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics.aggregation import MaxMetric, MeanMetric


class _Mean(MeanMetric):
    """torchmetrics' MeanMetric over one sampler output (`key`), or over `values(outputs, batch)`."""

    key = ""

    def __init__(self) -> None:  # no arguments in a spec (MeanMetric's nan_strategy/kwargs stay internal)
        super().__init__()

    def values(self, outputs: dict[str, Any], batch: dict[str, Any]) -> torch.Tensor:
        if self.key not in outputs:
            raise KeyError(f"metric {type(self).__name__} needs the sampler output '{self.key}'; got {sorted(outputs)}")
        return torch.as_tensor(outputs[self.key]).flatten()

    def update(self, outputs: dict[str, Any], batch: dict[str, Any]) -> None:  # type: ignore[override]
        super().update(self.values(outputs, batch).float().to(self.device))

    def compute(self) -> torch.Tensor:
        if self.weight == 0:  # as components/metrics/standard.py: an error, not a nan that looks like a result
            raise RuntimeError(f"{type(self).__name__}.compute() before any update()")
        return super().compute()


class NFE(_Mean):
    """Mean number of denoiser evaluations per prompt."""

    higher_is_better = False
    key = "nfe"


class VerifierScore(_Mean):
    """Mean verifier score of the returned samples."""

    higher_is_better = True
    key = "scores"


class InitialVerifierScore(_Mean):
    """Mean verifier score of LoTTS's initial samples (the best of its `num_initial` full samples)."""

    higher_is_better = True
    key = "initial_scores"


class OutsideMaskChange(MaxMetric):
    """Largest absolute change outside the resampling mask (0 = untouched)."""

    higher_is_better = False

    def __init__(self) -> None:  # no arguments in a spec
        super().__init__()

    def update(self, outputs: dict[str, Any], batch: dict[str, Any]) -> None:  # type: ignore[override]
        super().update(torch.as_tensor(outputs["outside_change"]).float().to(self.device))


def iou(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-example IoU of binary masks (B, ...); 0/0 counts as 0."""
    pred, target = pred.flatten(1) > 0.5, target.flatten(1) > 0.5
    inter = (pred & target).sum(1).float()
    union = (pred | target).sum(1).float()
    return inter / union.clamp_min(1)


class MaskIoU(_Mean):
    """Mean IoU of the predicted masks with the known defect masks."""

    higher_is_better = True

    def values(self, outputs: dict[str, Any], batch: dict[str, Any]) -> torch.Tensor:
        target = batch["defect_mask"].to(outputs["masks"].device)
        return iou(outputs["masks"], target)


class RandomMaskIoU(_Mean):
    """Chance baseline of `mask_iou`: a random set of positions with the predicted mask's area.

    Args:
        seed: Seed of the random masks.
    """

    higher_is_better = True

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)

    def values(self, outputs: dict[str, Any], batch: dict[str, Any]) -> torch.Tensor:
        pred = outputs["masks"].detach().cpu().flatten(1) > 0.5
        random = torch.zeros_like(pred)
        for i, area in enumerate(pred.sum(1).tolist()):
            random[i, torch.randperm(pred.shape[1], generator=self.generator)[: int(area)]] = True
        return iou(random.float(), batch["defect_mask"].detach().cpu())
