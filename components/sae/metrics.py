"""Reconstruction quality of an autoencoder: fraction of variance unexplained (FVU).

FVU = sum ||x - x_hat||^2 / sum ||x - mean(x)||^2 over every row seen since the last reset, with
mean(x) the mean of those rows; explained variance (EV, the SAE literature's other name for it) is
1 - FVU. States are sums (exact under DDP, reduced by addition). Used by `sae_training`
(specs/sae_replay/, the paper's EV / reconstruction metric).
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics import Metric


class FractionOfVarianceUnexplained(Metric):
    """FVU of reconstructions `outputs` against the rows batch["x"] (same shape; leading dims are
    flattened, the last one is the feature dimension). 0 is perfect; 1 is as good as the mean."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("squared_error", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("sum_squares", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("sum_rows", default=torch.zeros(0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        x = batch["x"]
        if outputs.shape != x.shape:
            raise ValueError(f"fvu: outputs of shape {tuple(outputs.shape)} do not match x of shape {tuple(x.shape)}")
        x = x.reshape(-1, x.shape[-1]).double()
        x_hat = outputs.reshape(-1, x.shape[-1]).double()
        if self.sum_rows.numel() == 0:
            self.sum_rows = torch.zeros(x.shape[1], dtype=torch.float64, device=x.device)
        self.squared_error += (x - x_hat).pow(2).sum()
        self.sum_squares += x.pow(2).sum()
        self.sum_rows += x.sum(0)
        self.count += x.shape[0]

    def compute(self) -> torch.Tensor:
        if self.count == 0:
            raise RuntimeError("fvu: compute() before any update()")
        total = self.sum_squares - self.sum_rows.pow(2).sum() / self.count
        return (self.squared_error / total.clamp_min(1e-30)).float()
