"""Geometric-model pretraining and adaptation from unlabeled video (sage_geo, NeurIPS 2026, at tiny scale).

Data: `synthetic_scene_video` rows (components/geometry/data.py): labelled source views (`x`, `y`
depth), target clips (`frames`, `rel_pose`, sparse SfM `anchors`; trajectory selection is done
there), and for evaluation unseen source and target views with ground truth. Model: a pointmap
model (`pointmap_cnn`: image -> camera-frame pointmap, depth = its z).

Methods (`method`):

- ``pretrain``: L1 error of the predicted depth on the labelled source views (the geometry model
  "pretrained with ground truth"; the upstream stage of every adaptation run, passed on with
  `init: {spec: ...}`).
- ``adapt`` (SAGE's hybrid supervision, each term with its weight, 0 ablating it):
  `anchor_weight` x sparse geometric anchoring (L1 to the SfM points of both frames),
  `dense_weight` x dense multi-view consistency (photometric + geometric reprojection error of each
  frame against the other, both directions, through the predicted depths and the SfM relative
  pose; a depth-reprojection loss in place of the paper's 3D-Gaussian rendering), and
  `replay_weight` x the source L1 loss on labelled source views (the anchor-data regularizer
  against forgetting; the same batch rows every arm draws).

Logged: `train/loss` and its parts `train/loss.<part>`; at val and test, on unseen scenes, the
Chamfer distance between predicted and ground-truth pointmaps of each view (components/geometry/ops.py),
averaged over the views: `{split}/chamfer` (target domain), `{split}/source_chamfer`; with
`method: adapt`, the same for the model as it was before adaptation (`{split}/chamfer_unadapted`,
`{split}/source_chamfer_unadapted`; a run that trains nothing, `phases: [test]`, is its own
unadapted model) and the relative changes `{split}/chamfer_reduction` = 1 - chamfer /
chamfer_unadapted and `{split}/source_chamfer_rise` = source_chamfer / source_chamfer_unadapted - 1;
and the trivial mean-scene predictor (every pixel at the mean depth of the source training views)
`{split}/chamfer_mean_scene`.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Literal

import lightning as L
import torch
from torch import nn

from components.geometry.ops import anchor_loss, chamfer_distance, reprojection_loss, unproject
from components.tasks.supervised import optimizers_config
from components.types import NonNegativeFloat

Method = Literal["pretrain", "adapt"]


class GeometryAdaptation(L.LightningModule):
    """Pretrain a pointmap model on labelled source views, or adapt it on unlabeled target video.

    Args:
        model: The pointmap model (`pointmap_cnn`), with `depth(image)` and `focal`.
        optimizer: Factory called with the model's parameters.
        scheduler: Learning-rate scheduler factory, or None.
        method: pretrain or adapt (module docstring).
        anchor_weight: Weight of sparse geometric anchoring (adapt; 0 ablates it).
        dense_weight: Weight of dense multi-view consistency (adapt; 0 ablates it).
        replay_weight: Weight of the labelled source-data replay (adapt; 0 ablates it).
    """

    LOGGED_METRICS = ("train/loss", "train/loss.{part}", "{split}/chamfer", "{split}/source_chamfer",
                      "{split}/chamfer_unadapted", "{split}/source_chamfer_unadapted", "{split}/chamfer_reduction",
                      "{split}/source_chamfer_rise", "{split}/chamfer_mean_scene")

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None, method: Method = "pretrain",
                 anchor_weight: NonNegativeFloat = 1.0, dense_weight: NonNegativeFloat = 1.0,
                 replay_weight: NonNegativeFloat = 1.0) -> None:
        super().__init__()
        if method not in Method.__args__:
            raise ValueError(f"method must be one of {', '.join(Method.__args__)}; got '{method}'")
        if method == "adapt" and anchor_weight + dense_weight == 0:
            raise ValueError("method 'adapt' needs a target-domain term: anchor_weight or dense_weight above 0")
        self.model, self.method = model, method
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.anchor_weight, self.dense_weight, self.replay_weight = anchor_weight, dense_weight, replay_weight
        # The model before adaptation, taken when fitting starts (after `init` loaded the pretrained
        # weights); part of the checkpoint, so a resumed run keeps it.
        self.initial = copy.deepcopy(model).requires_grad_(False) if method == "adapt" else None
        self.register_buffer("initial_taken", torch.tensor(False))
        self.mean_scene: torch.Tensor | None = None  # taken from the data at the first evaluation
        self.sums: dict[str, list[float]] = {}

    def on_fit_start(self) -> None:
        if self.initial is not None and not bool(self.initial_taken):
            self.initial.load_state_dict(self.model.state_dict())
            self.initial_taken.fill_(True)

    # -- training ----------------------------------------------------------------------------------
    def source_loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return (self.model.depth(batch["x"]) - batch["y"]).abs().mean()

    def adaptation_losses(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        frames, anchors, rel = batch["frames"], batch["anchors"], batch["rel_pose"]
        b = len(frames)
        depth = self.model.depth(frames.flatten(0, 1)).unflatten(0, (b, 2))
        parts = {}
        if self.anchor_weight > 0:
            parts["anchor"] = self.anchor_weight * anchor_loss(depth, anchors)
        if self.dense_weight > 0:
            focal = self.model.focal
            parts["dense"] = self.dense_weight * 0.5 * (
                reprojection_loss(depth[:, 0], depth[:, 1], frames[:, 0], frames[:, 1], rel[:, 0], focal)
                + reprojection_loss(depth[:, 1], depth[:, 0], frames[:, 1], frames[:, 0], rel[:, 1], focal))
        if self.replay_weight > 0:
            parts["replay"] = self.replay_weight * self.source_loss(batch)
        return parts

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        parts = {"source": self.source_loss(batch)} if self.method == "pretrain" else self.adaptation_losses(batch)
        loss = sum(parts.values())
        size = len(batch["x"])
        self.log("train/loss", loss, on_step=True, prog_bar=True, batch_size=size)
        for name, value in parts.items():
            self.log(f"train/loss.{name}", value, on_step=True, batch_size=size)
        return loss

    # -- evaluation --------------------------------------------------------------------------------
    def chamfer(self, model: nn.Module, image: torch.Tensor, depth: torch.Tensor) -> torch.Tensor:
        """(B,) Chamfer distance of each view's predicted pointmap to its ground-truth pointmap."""
        focal = self.model.focal
        return chamfer_distance(model(image).flatten(1, 2), unproject(depth, focal).flatten(1, 2),
                                valid=(depth > 0).flatten(1))

    def mean_scene_depth(self) -> torch.Tensor:
        """The mean depth map of the source training views (the trivial predictor), taken once."""
        if self.mean_scene is None:
            self.mean_scene = self.trainer.datamodule.split("train")["y"].mean(0).to(self.device)
        return self.mean_scene

    def evaluate(self, batch: dict[str, torch.Tensor]) -> None:
        before = self.initial if self.initial is not None and bool(self.initial_taken) else self.model
        target_x, target_y = batch["target_x"], batch["target_y"]
        values = {"chamfer": self.chamfer(self.model, target_x, target_y),
                  "source_chamfer": self.chamfer(self.model, batch["x"], batch["y"]),
                  "chamfer_mean_scene": self.chamfer(
                      lambda image: unproject(self.mean_scene_depth().expand(len(image), -1, -1), self.model.focal),
                      target_x, target_y)}
        if self.method == "adapt":
            values["chamfer_unadapted"] = self.chamfer(before, target_x, target_y)
            values["source_chamfer_unadapted"] = self.chamfer(before, batch["x"], batch["y"])
        for name, value in values.items():
            self.sums.setdefault(name, []).extend(value.tolist())

    def log_evaluation(self, split: str) -> None:
        means = {name: sum(v) / len(v) for name, v in self.sums.items()}
        if self.method == "adapt":
            means["chamfer_reduction"] = 1 - means["chamfer"] / means["chamfer_unadapted"]
            means["source_chamfer_rise"] = means["source_chamfer"] / means["source_chamfer_unadapted"] - 1
        for name, value in means.items():
            self.log(f"{split}/{name}", value)
        self.sums = {}

    @torch.no_grad()
    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.evaluate(batch)

    @torch.no_grad()
    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.evaluate(batch)

    def on_validation_epoch_end(self) -> None:
        self.log_evaluation("val")

    def on_test_epoch_end(self) -> None:
        self.log_evaluation("test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.model.parameters())
