"""Explainable graph forecasting (stgib): a forecaster trained under a sufficiency and a compression
term, and the explanation metrics against a planted causal subgraph.

Loss per batch: sufficiency, the mean squared error of the forecast made through the (sampled)
masked graph, plus `beta` times compression, the mean over windows and edges of
KL(Bernoulli(sigmoid(logit)) || Bernoulli(`prior`)) (the information bottleneck's variational
bound on I(mask; input) with a sparse Bernoulli prior, as in GIB/GSAT). A model without masks (the
black box) trains on the squared error alone (`beta` must then be 0).

Logged: `train/loss`, `train/kl`; `val/mae` per epoch (the model selection metric); at test
- `test/mae`, `test/rmse` (deterministic masks) and `test/mae_persistence` (the last value of the
  window as the forecast: the floor);
- with masks: `test/mask_mean` (share of the edge budget kept: sparsity), `test/edge_auroc_mask`
  (AUROC of each edge's mean mask over the test windows against the planted causal edges, when the
  data has them), `test/mask_mean_causal`, `test/mask_mean_distractor`, and
  `test/mae_masked_out` (fidelity: the forecast error when the edges whose mask is above 0.5 in
  each window are removed, the rest kept at their mask);
- with `attribution: integrated_gradients` (post-hoc, on any model): captum's integrated gradients
  of the sum of each window's forecasts with respect to the edge weights, from all-zero to the
  weights the model uses (ones for the black box), `ig_steps` steps; an edge's score is the mean
  |attribution| over the test windows: `test/edge_auroc_attribution`.
`test/edge_auroc_random` is the AUROC of random scores drawn with the run's seed (chance, about 0.5).
With time-indexed ground truth in the batches (`edge_label` (B, E): the edges causal at each
window's target time), the time-indexed recovery: `test/edge_auroc_mask_t` and
`test/edge_auroc_attribution_t`, the AUROC of every (window, edge) score of the test windows
against that window's labels, pooled.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import lightning as L
import numpy as np
import torch
from torch import nn

from components.tasks.supervised import optimizers_config
from components.types import PositiveInt
from framework.extras import require


def bernoulli_kl(logits: torch.Tensor, prior: float) -> torch.Tensor:
    """Mean KL(Bernoulli(sigmoid(logits)) || Bernoulli(prior))."""
    p = torch.sigmoid(logits).clamp(1e-6, 1 - 1e-6)
    return (p * torch.log(p / prior) + (1 - p) * torch.log((1 - p) / (1 - prior))).mean()


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores))


class GraphForecasting(L.LightningModule):
    """Args:
        model: A graph forecaster (`st_graph_forecaster`): model(x, edge_index, edge_weight, sample).
        optimizer: Factory called with the parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        beta: Weight of the compression term (0: none; the ablation).
        prior: The sparse Bernoulli prior's keep probability r.
        attribution: The post-hoc edge attribution computed at test ('none' or 'integrated_gradients').
        ig_steps: Integration steps of integrated gradients.
    """

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None, beta: float = 0.0, prior: float = 0.3,
                 attribution: Literal["none", "integrated_gradients"] = "none", ig_steps: PositiveInt = 16) -> None:
        super().__init__()
        if not 0.0 < prior < 1.0:
            raise ValueError(f"prior must be in (0, 1), got {prior}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        if beta > 0 and not getattr(model, "bottleneck", False):
            raise ValueError("beta > 0 needs a model with edge masks (st_graph_forecaster with bottleneck: true)")
        self.model, self.beta, self.prior = model, beta, prior
        self.attribution, self.ig_steps = attribution, ig_steps
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.register_buffer("edge_index", torch.zeros(2, 0, dtype=torch.long), persistent=False)
        self.edge_label: np.ndarray | None = None
        self._reset_test()

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        nodes = info.get("num_nodes")
        if nodes is not None and "num_nodes" in model_args and model_args["num_nodes"] != nodes:
            return [("num_nodes", f"is {model_args['num_nodes']} but the data has {nodes} nodes")]
        return []

    def setup(self, stage: str) -> None:
        datamodule = self.trainer.datamodule
        if datamodule is None or not hasattr(datamodule, "graph"):
            raise RuntimeError("graph_forecasting needs a graph data module (one with graph())")
        graph = datamodule.graph()
        self.edge_index = torch.as_tensor(graph["edge_index"], dtype=torch.long, device=self.device)
        self.edge_label = graph["edge_label"]

    def _reset_test(self) -> None:
        self.sums: dict[str, float] = {"abs": 0.0, "sq": 0.0, "persist": 0.0, "masked_out": 0.0, "count": 0.0}
        self.mask_sum: torch.Tensor | None = None
        self.attr_sum: torch.Tensor | None = None
        self.windows = 0
        self.per_window: dict[str, list[np.ndarray]] = {"label": [], "mask": [], "attribution": []}

    def forward(self, x: torch.Tensor, sample: bool = False) -> dict[str, Any]:
        return self.model(x, self.edge_index, sample=sample)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        out = self(batch["x"], sample=True)
        loss = torch.mean((out["pred"] - batch["y"]) ** 2)
        if out["logits"] is not None:
            kl = bernoulli_kl(out["logits"], self.prior)
            self.log("train/kl", kl, on_step=True, on_epoch=False, batch_size=len(batch["x"]))
            loss = loss + self.beta * kl
        self.log("train/loss", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=len(batch["x"]))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        out = self(batch["x"])
        self.log("val/mae", torch.mean(torch.abs(out["pred"] - batch["y"])), on_epoch=True, prog_bar=True,
                 batch_size=len(batch["x"]))

    def _integrated_gradients(self, x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        captum = require("captum.attr", "attribution 'integrated_gradients' of task 'graph_forecasting'")
        edge_index = self.edge_index

        def forecast(edge_weight: torch.Tensor, windows: torch.Tensor) -> torch.Tensor:
            return self.model(windows, edge_index, edge_weight=edge_weight)["pred"].sum(dim=1)

        with torch.inference_mode(False), torch.enable_grad():
            x, weights = x.clone(), weights.clone()
            ig = captum.IntegratedGradients(forecast)
            attributions = ig.attribute(weights, baselines=torch.zeros_like(weights), additional_forward_args=(x,),
                                        n_steps=self.ig_steps, internal_batch_size=len(x) * self.ig_steps)
        return attributions.detach().abs()

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        x, y = batch["x"], batch["y"]
        out = self(x)
        error = out["pred"] - y
        self.sums["abs"] += float(error.abs().sum())
        self.sums["sq"] += float((error ** 2).sum())
        self.sums["persist"] += float((x[:, -1, :] - y).abs().sum())
        self.sums["count"] += float(y.numel())
        self.windows += len(x)
        mask = out["mask"]
        timed = "edge_label" in batch
        if timed:
            self.per_window["label"].append(batch["edge_label"].cpu().numpy())
        if out["logits"] is not None:
            if timed:
                self.per_window["mask"].append(mask.detach().cpu().numpy())
            self.mask_sum = mask.sum(0) if self.mask_sum is None else self.mask_sum + mask.sum(0)
            kept = torch.where(mask > 0.5, torch.zeros_like(mask), mask)
            masked = self.model(x, self.edge_index, edge_weight=kept)["pred"]
            self.sums["masked_out"] += float((masked - y).abs().sum())
        if self.attribution == "integrated_gradients":
            attr = self._integrated_gradients(x, mask)
            if timed:
                self.per_window["attribution"].append(attr.cpu().numpy())
            attr = attr.sum(0)
            self.attr_sum = attr if self.attr_sum is None else self.attr_sum + attr

    def on_test_epoch_end(self) -> None:
        count = self.sums["count"]
        values = {"test/mae": self.sums["abs"] / count, "test/rmse": (self.sums["sq"] / count) ** 0.5,
                  "test/mae_persistence": self.sums["persist"] / count}
        label = self.edge_label
        if self.mask_sum is not None:
            mask = (self.mask_sum / self.windows).cpu().numpy()
            values["test/mask_mean"] = float(mask.mean())
            values["test/mae_masked_out"] = self.sums["masked_out"] / count
            if label is not None:
                values["test/edge_auroc_mask"] = auroc(mask, label)
                values["test/mask_mean_causal"] = float(mask[label == 1].mean())
                values["test/mask_mean_distractor"] = float(mask[label == 0].mean())
        if self.attr_sum is not None and label is not None:
            values["test/edge_auroc_attribution"] = auroc((self.attr_sum / self.windows).cpu().numpy(), label)
        if self.per_window["label"]:
            labels = np.concatenate(self.per_window["label"]).ravel()
            for name in ("mask", "attribution"):
                if self.per_window[name]:
                    values[f"test/edge_auroc_{name}_t"] = auroc(np.concatenate(self.per_window[name]).ravel(), labels)
        if label is not None:
            rng = np.random.default_rng(torch.initial_seed() % (2 ** 32))
            values["test/edge_auroc_random"] = auroc(rng.random(len(label)), label)
        for key, value in values.items():
            self.log(key, float(value))
        self._reset_test()

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)
