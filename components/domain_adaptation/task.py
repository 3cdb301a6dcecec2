"""Gradual domain adaptation: FlowGDA (NeurIPS 2026) and the baselines it is compared with.

Data: `domain_sequence` batches (components/domain_adaptation/data.py): train rows hold one example
of each of the D domains and the source label only; val/test rows hold one held-out example at every
domain with its labels. Model: `encoder_classifier` (encoder + linear head), pretrained on the source
by `method: source_only` and passed on with `init: {spec: ...}`.

Methods (`method`):

- ``source_only``: cross-entropy on the labelled source; nothing adapts (the baseline, and the
  upstream stage of every other method).
- ``gradual_self_training`` (GST, Kumar et al. 2020): the training steps are split evenly over the
  domains 1..D-1 in order; at the start of domain k a frozen copy of the current model (the teacher)
  labels domain k's examples with its argmax, the `keep_fraction` most confident of each batch are
  kept, and the whole model is trained on them by cross-entropy (with `freeze_encoder`, the head
  only: the parts FlowGDA adapts, for a comparison at equal trainable parts).
- ``direct_self_training``: the same, with every round on the target domain (no intermediates).
- ``flow`` (FlowGDA as built here; the paper's exact losses are not public, see specs/flowgda/README.md):
  a velocity field v(z, tau) over global time tau in [0, 1] moves representations z = encoder(x)
  (encoder frozen) through the domains, domain k sitting at tau_k = k / (D - 1). Two phases:

  1. transport (the first `transport_steps` steps; only v trains): conditional flow matching
     (components/generative/flow_matching.py) on every consecutive pair, left to right:
     z of domain k -> z of domain k+1 on [tau_k, tau_k+1], coupled by `coupling`; and, with `anchored`,
     *source-anchored transport*: the source representations carried by v to tau_k (no gradient)
     -> z of domain k+1, so that the composed flow from the source stays on the data;
  2. adaptation (the remaining steps; only the head trains): cross-entropy of the head on the
     source representations transported to every tau_k, with their source labels, plus
     `consistency_weight` x the *semantic-consistency* loss: for real examples of each domain k >= 1,
     KL(p_source(Phi_{tau_k -> 0}(z)) || p_head(z)), the source classifier's prediction at the point
     the flow carries z back to, against the head's prediction at z (labels kept along the flow).

Logged: `train/loss` (and its parts `train/loss.<part>`); `val/` and `test/` `target_accuracy`,
`source_accuracy` and `intermediate_accuracy` (mean over the domains in between).
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Literal

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

from components.generative.flow_matching import Coupling, Solver, flow_matching_loss, integrate
from components.kinds import Model
from components.tasks.supervised import optimizers_config
from components.types import NonNegativeFloat, NonNegativeInt, OpenFraction, PositiveInt

Method = Literal["source_only", "gradual_self_training", "direct_self_training", "flow"]


def confident_pseudo_labels(teacher_logits: torch.Tensor, keep_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(indices, labels): the argmax labels of the ceil(keep_fraction x B) rows the teacher is most
    confident about (highest max probability), as in GST's filtering of the least confident points."""
    confidence, labels = teacher_logits.softmax(-1).max(-1)
    keep = max(1, int(torch.ceil(torch.tensor(keep_fraction * len(labels))).item()))
    index = confidence.topk(keep).indices
    return index, labels[index]


def semantic_consistency(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """KL(p_teacher || p_student), averaged over rows; the teacher gets no gradient."""
    return F.kl_div(student_logits.log_softmax(-1), teacher_logits.detach().log_softmax(-1), log_target=True,
                    reduction="batchmean")


class GradualDomainAdaptation(L.LightningModule):
    """Adapt a source-trained encoder_classifier along a domain sequence (module docstring).

    Args:
        model: The encoder_classifier (with `encoder`, `head`, `latent_dim`).
        optimizer: Factory called with the trainable parameters (model and velocity field).
        scheduler: Learning-rate scheduler factory, or None.
        method: source_only, gradual_self_training, direct_self_training or flow.
        velocity: The velocity field of `flow`, v(z, tau) on the representation (e.g. velocity_mlp
            with dim = the model's latent_dim); only for `flow`.
        transport_steps: `flow`'s phase 1 length in optimizer steps; the rest of max_steps is phase 2.
        coupling: How a batch of domain k is paired with one of domain k+1 (flow matching).
        anchored: Add the source-anchored transport term in phase 1.
        consistency_weight: Weight of the semantic-consistency loss in phase 2 (0 ablates it).
        ode_steps: Solver steps per domain interval when the flow is integrated.
        solver: euler, midpoint or rk4.
        keep_fraction: Share of each batch the self-training teacher labels (most confident first).
        freeze_encoder: Self-training adapts the head only, the encoder kept as the source model's
            (FlowGDA's encoder is always frozen; only for gradual/direct self-training).
    """

    LOGGED_METRICS = ("train/loss", "train/loss.{part}", "{split}/target_accuracy", "{split}/source_accuracy",
                      "{split}/intermediate_accuracy")

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None, method: Method = "source_only",
                 velocity: Model | None = None, transport_steps: NonNegativeInt = 0,
                 coupling: Coupling = "minibatch_ot", anchored: bool = True,
                 consistency_weight: NonNegativeFloat = 1.0, ode_steps: PositiveInt = 4, solver: Solver = "euler",
                 keep_fraction: OpenFraction = 0.9, freeze_encoder: bool = False) -> None:
        super().__init__()
        if method not in Method.__args__:
            raise ValueError(f"method must be one of {', '.join(Method.__args__)}; got '{method}'")
        if (method == "flow") != (velocity is not None):
            raise ValueError("method 'flow' needs a velocity field (velocity: {type: velocity_mlp, ...}) and "
                             f"the other methods take none; got method '{method}' with "
                             f"{'a' if velocity is not None else 'no'} velocity")
        if method == "flow" and getattr(velocity, "dim", model.latent_dim) != model.latent_dim:
            raise ValueError(f"velocity.dim must equal model.latent_dim ({model.latent_dim}), got {velocity.dim}")
        self.model, self.velocity, self.method = model, velocity, method
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.transport_steps, self.coupling, self.anchored = transport_steps, coupling, anchored
        self.consistency_weight, self.ode_steps, self.solver = consistency_weight, ode_steps, solver
        self.keep_fraction = keep_fraction
        if freeze_encoder and method not in ("gradual_self_training", "direct_self_training"):
            raise ValueError(f"freeze_encoder is for the self-training methods (flow always freezes the encoder); "
                             f"got method '{method}'")
        if freeze_encoder:
            self.model.encoder.requires_grad_(False)
        # The frozen copy: GST's teacher of the current round, or FlowGDA's source classifier. It and
        # the round it was taken in are part of the checkpoint, so a resumed run keeps them.
        self.teacher = None if method == "source_only" else copy.deepcopy(model).requires_grad_(False)
        self.register_buffer("teacher_round", torch.tensor(-1))

    # -- the phases ------------------------------------------------------------------------------
    def total_steps(self) -> int:
        return int(self.trainer.estimated_stepping_batches)

    def on_fit_start(self) -> None:
        if self.method == "flow" and not 0 < self.transport_steps < self.total_steps():
            raise ValueError(f"transport_steps must be between 1 and the run's steps - 1 ({self.total_steps() - 1}); "
                             f"got {self.transport_steps}")

    def refresh_teacher(self, round_index: int) -> None:
        """Copy the current model into the teacher once per round."""
        if int(self.teacher_round) != round_index:
            self.teacher.load_state_dict(self.model.state_dict())
            self.teacher_round.fill_(round_index)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch["x"], batch["y"]
        if self.method == "source_only":
            parts = {"classification": F.cross_entropy(self.model(x[:, 0]), y)}
        elif self.method == "flow":
            self.refresh_teacher(0)  # the source classifier, before anything adapts
            parts = self.transport_losses(x) if self.global_step < self.transport_steps else self.adaptation_losses(x, y)
        else:
            parts = self.self_training_losses(x)
        loss = sum(parts.values())
        self.log("train/loss", loss, on_step=True, prog_bar=True, batch_size=len(x))
        for name, value in parts.items():
            self.log(f"train/loss.{name}", value, on_step=True, batch_size=len(x))
        return loss

    def self_training_losses(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """GST / direct self-training: round r of D-1 trains on domain r+1 (GST) or the target."""
        domains = x.shape[1]
        round_index = min(self.global_step * (domains - 1) // self.total_steps(), domains - 2)
        self.refresh_teacher(round_index)
        domain = round_index + 1 if self.method == "gradual_self_training" else domains - 1
        with torch.no_grad():
            index, labels = confident_pseudo_labels(self.teacher(x[:, domain]), self.keep_fraction)
        return {"self_training": F.cross_entropy(self.model(x[index, domain]), labels)}

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """(B, D, F) -> (B, D, latent) with the frozen encoder."""
        with torch.no_grad():
            return self.model.encoder(x.flatten(0, 1)).unflatten(0, x.shape[:2])

    def carry(self, z: torch.Tensor, t0: float, t1: float) -> torch.Tensor:
        """Representations z carried by the flow from tau = t0 to t1 (no gradient)."""
        intervals = max(1, round(abs(t1 - t0) * self.intervals))
        with torch.no_grad():
            return integrate(self.velocity, z, steps=self.ode_steps * intervals, solver=self.solver, t0=t0, t1=t1)

    def segment(self, k: int) -> Callable[..., torch.Tensor]:
        """The velocity on interval k in its own time s in [0, 1]: dz/ds = v(z, (k + s) / K) / K."""
        return lambda z, s, cond: self.velocity(z, (k + s) / self.intervals, cond) / self.intervals

    def transport_losses(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Phase 1: flow matching between consecutive domains, and the source-anchored transport."""
        z = self.encode(x)
        self.intervals = x.shape[1] - 1
        parts = {"flow_matching": torch.stack([
            flow_matching_loss(self.segment(k), z[:, k], z[:, k + 1], coupling=self.coupling)
            for k in range(self.intervals)]).mean()}
        if self.anchored and self.intervals > 1:
            parts["anchored"] = torch.stack([
                flow_matching_loss(self.segment(k), self.carry(z[:, 0], 0.0, k / self.intervals), z[:, k + 1],
                                   coupling=self.coupling)
                for k in range(1, self.intervals)]).mean()
        return parts

    def adaptation_losses(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """Phase 2: the head on transported labelled source points, and semantic consistency."""
        z = self.encode(x)
        self.intervals = x.shape[1] - 1
        with torch.no_grad():
            path = integrate(self.velocity, z[:, 0], steps=self.ode_steps * self.intervals, solver=self.solver,
                             return_path=True)[:: self.ode_steps]  # (D, B, latent): the source at each tau_k
        parts = {"classification": F.cross_entropy(self.model.head(path.flatten(0, 1)), y.repeat(len(path)))}
        if self.consistency_weight > 0:
            parts["consistency"] = self.consistency_weight * torch.stack([
                semantic_consistency(self.model.head(z[:, k]),
                                     self.teacher.head(self.carry(z[:, k], k / self.intervals, 0.0)))
                for k in range(1, self.intervals + 1)]).mean()
        return parts

    # -- evaluation ------------------------------------------------------------------------------
    def evaluate(self, batch: dict[str, torch.Tensor], split: str) -> None:
        x, y = batch["x"], batch["y"]
        correct = (self.model(x.flatten(0, 1)).argmax(-1).unflatten(0, x.shape[:2]) == y).float()
        size = len(x)
        self.log(f"{split}/source_accuracy", correct[:, 0].mean(), on_epoch=True, batch_size=size, sync_dist=True)
        self.log(f"{split}/target_accuracy", correct[:, -1].mean(), on_epoch=True, batch_size=size, sync_dist=True)
        if x.shape[1] > 2:
            self.log(f"{split}/intermediate_accuracy", correct[:, 1:-1].mean(), on_epoch=True, batch_size=size,
                     sync_dist=True)

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.evaluate(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self.evaluate(batch, "test")

    def configure_optimizers(self) -> Any:
        parameters = [p for p in self.parameters() if p.requires_grad]
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, parameters)
