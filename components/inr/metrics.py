"""Peak signal-to-noise ratio of reconstructions, the INR literature's quality measure."""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics import Metric

from components.inr.target import signal_mse
from components.types import PositiveFloat


class PSNR(Metric):
    """Mean over signals of 10 log10(peak^2 / MSE), each signal's MSE over its points and channels
    (outputs and batch["y"] of shape (B, P, C)); values in [0, peak]. Averaging per-signal PSNR
    (not the PSNR of the pooled MSE) is the convention of Trans-INR and its successors.

    Args:
        peak: The largest possible value (1.0 for values in [0, 1]).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, peak: PositiveFloat = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.peak = peak
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0), dist_reduce_fx="sum")

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        y = batch["y"]
        if outputs.shape != y.shape:
            raise ValueError(f"psnr: outputs of shape {tuple(outputs.shape)} do not match targets {tuple(y.shape)}")
        mse = signal_mse(outputs.double(), y.double()).clamp_min(1e-12)
        self.total += (10.0 * torch.log10(self.peak ** 2 / mse)).sum()
        self.count += len(y)

    def compute(self) -> torch.Tensor:
        if self.count == 0:
            raise RuntimeError("psnr: compute() before any update()")
        return (self.total / self.count).float()
