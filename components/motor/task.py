"""`plant_bptt`: train a code-conditioned recurrent controller by backpropagation through a
differentiable plant, then compose novel movements by a search over codes with the network frozen.

motor_adapters (abstract: ../../../shared/papers/motor_adapters.md). Data: `reach_repertoire`
(components/motor/data.py), whose plant is a torch `envs` entry (components/motor/plants.py).

Training step: the controller runs closed loop on the plant for `segment_steps` steps from the
batch's start postures, told the batch's code; it sees the plant's observation and a segment cue,
the hand's displacement since the current segment began (x `cue_scale`; a relative reach needs
its origin, and a sequence gives each segment its own); the loss is the mean over steps of the squared
distance between hand and target (start hand + the primitive's displacement), divided by the
reach distance squared (1 at the start), plus `effort` x the mean squared action; gradients flow
through the plant (BPTT), clipped to norm `clip`.

Test (network frozen), from the home posture:
- `test/primitive_error_cm`: mean over the K primitives of the hand's distance to its target after
  `segment_steps` steps;
- the novel movements: two segments, code i for `segment_steps` steps, then code j (the hidden
  state and the plant carry on), for all K^2 pairs; the targets are the distinct non-zero sums
  d_i + d_j of two displacements (for K = 8: 8 double-length reaches and 24 bent two-segment
  ones, none of them a trained movement). The high-level policy is the exhaustive search over the K^2
  code sequences for the one whose endpoint is closest to each target (the search sees only
  endpoints). `test/novel_error_cm`: mean over targets of the searched sequence's endpoint error;
  `test/novel_intended_error_cm`: the same with the pair that defines the target (the better of its
  two orders), no search; `test/novel_still_error_cm`: the error of a hand that does not move
  (the trivial floor).
- with adapters, their learned changes D_k = dW_k - dW_k(0): `test/adapter_pr_max` /
  `test/adapter_pr_mean`: the participation ratio (sum s^2)^2 / sum s^4 of D_k's singular values
  (the effective rank, <= hidden), the largest / mean over k; `test/adapter_pr_weights_max` the same for the
  adapters' weights dW_k themselves (with a random init, the init included);
  `test/adapter_overlap_mean` / `_max`: for k != l, ||U_k^T U_l||_F^2 / r with U_k the top-`rank_top`
  left singular vectors of D_k (1 = the same r-dimensional subspace, 0 = orthogonal; random
  subspaces give about r / hidden, logged as `test/adapter_overlap_chance`); `test/adapter_rel_norm`:
  mean ||D_k||_F / ||W||_F.
"""

from __future__ import annotations

import itertools
from typing import Any

import lightning as L
import torch

from components.kinds import Model
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt


def participation_ratio(matrix: torch.Tensor) -> float:
    s2 = torch.linalg.svdvals(matrix.double()) ** 2
    total = s2.sum()
    return float(total ** 2 / (s2 ** 2).sum()) if total > 0 else float("nan")


def subspace_overlaps(changes: torch.Tensor, rank: int) -> torch.Tensor:
    """||U_k^T U_l||_F^2 / rank for k < l, U_k the top-`rank` left singular vectors of changes[k]."""
    bases = [torch.linalg.svd(d.double())[0][:, :rank] for d in changes]
    return torch.tensor([float((bases[k].T @ bases[m]).pow(2).sum() / rank)
                         for k, m in itertools.combinations(range(len(bases)), 2)])


class PlantBPTT(L.LightningModule):
    """Backpropagation through a differentiable plant, then a search over code sequences (module docstring).

    Args:
        model: A code-conditioned controller (`motor_rnn`).
        optimizer: The optimizer (adam / adamw; weight decay is the optimizer's).
        effort: Weight of the mean squared action in the loss.
        clip: Gradient-norm clip.
        rank_top: r, the dimension of each adapter's subspace in the overlap analysis.
        cue_scale: Factor on the segment cue (the hand's displacement since the segment began, m).
    """

    def __init__(self, model: Model, optimizer: Any, effort: NonNegativeFloat = 1.0e-3,
                 clip: PositiveFloat = 1.0, rank_top: PositiveInt = 4,
                 cue_scale: PositiveFloat = 10.0) -> None:
        super().__init__()
        self.automatic_optimization = False
        for attr in ("initial_state", "context", "step"):
            if not callable(getattr(model, attr, None)):
                raise TypeError(f"model must be a code-conditioned controller (motor_rnn), got "
                                f"{type(model).__name__} without {attr}")
        self.model, self.optimizer_factory = model, optimizer
        self.effort, self.clip, self.rank_top, self.cue_scale = effort, clip, rank_top, cue_scale

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        problems = []
        for key in ("out_features", "codes"):
            if key in model_args and key in info and model_args[key] != info[key]:
                problems.append((key, f"is {model_args[key]} but the data has {key} = {info[key]}"))
        return problems

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.optimizer_factory(params=[p for p in self.model.parameters() if p.requires_grad])

    # --- the closed loop ----------------------------------------------------------------------
    def _squash(self, env: Any, raw: torch.Tensor) -> torch.Tensor:
        kind = getattr(env, "output_activation", "tanh")
        return torch.sigmoid(raw) if kind == "sigmoid" else torch.tanh(raw)

    def rollout(self, env: Any, start: torch.Tensor, segments: list[torch.Tensor], steps: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the controller on the plant from joint angles `start` (B, 2), told each code of
        `segments` (a list of (B,) long tensors) for `steps` steps in turn. Returns the start hand
        (B, 2), the hands (B, S*steps, 2) and the actions (B, S*steps, A)."""
        obs, info = env.reset(options={"joint_state": start})
        start_hand = hand = info["states"]["fingertip"]
        h = self.model.initial_state(start.shape[0])
        hands, actions = [], []
        for code in segments:
            context = self.model.context(torch.nn.functional.one_hot(code, self.model.codes).float())
            origin = hand.detach()
            for _ in range(steps):
                cue = (hand - origin) * self.cue_scale
                raw, h = self.model.step(torch.cat([obs, cue], dim=1), h, context)
                action = self._squash(env, raw)
                obs, _, _, _, info = env.step(action)
                hand = info["states"]["fingertip"]
                hands.append(hand)
                actions.append(action)
        return start_hand, torch.stack(hands, 1), torch.stack(actions, 1)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        data = self.trainer.datamodule
        env = data.env
        start_hand, hands, actions = self.rollout(env, batch["start"], [batch["given"]], data.segment_steps)
        target = start_hand + data.displacements[batch["code"]]
        position = ((hands - target[:, None]) ** 2).sum(-1).mean() / data.distance ** 2
        loss = position + self.effort * (actions ** 2).mean()
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(loss)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        optimizer.step()
        endpoint = (hands[:, -1] - target).norm(dim=-1).mean()
        self.log_dict({"train/loss": loss.detach(), "train/position_loss": position.detach(),
                       "train/endpoint_error_cm": 100 * endpoint.detach(), "train/grad_norm": norm},
                      on_step=True, batch_size=1)

    # --- evaluation ---------------------------------------------------------------------------
    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        data = self.trainer.datamodule
        env, steps, disp = data.env, data.segment_steps, data.displacements
        K = len(disp)
        metrics: dict[str, float] = {}
        with torch.no_grad():
            home = batch["home"][0]
            codes = torch.arange(K)
            start_hand, hands, _ = self.rollout(env, home.expand(K, 2), [codes], steps)
            metrics["primitive_error_cm"] = 100 * float((hands[:, -1] - start_hand - disp).norm(dim=-1).mean())
            first, second = torch.meshgrid(codes, codes, indexing="ij")
            first, second = first.reshape(-1), second.reshape(-1)
            start_hand, hands, _ = self.rollout(env, home.expand(K * K, 2), [first, second], steps)
            endpoints = hands[:, -1] - start_hand                      # (K^2, 2) displacement reached
            sums = disp[first] + disp[second]                          # (K^2, 2) the pair's target
            keep, seen = [], []
            for p in range(K * K):                                     # distinct non-zero targets
                if sums[p].norm() > 1e-6 * data.distance and all((sums[p] - s).norm() > 1e-6 * data.distance for s in seen):
                    seen.append(sums[p])
                    keep.append(p)
            targets = sums[keep]
            errors = torch.cdist(targets.double(), endpoints.double())  # (targets, K^2)
            metrics["novel_error_cm"] = 100 * float(errors.min(dim=1).values.mean())
            same = (torch.cdist(targets.double(), sums.double()) < 1e-6 * data.distance)
            metrics["novel_intended_error_cm"] = 100 * float(errors.masked_fill(~same, float("inf")).min(dim=1).values.mean())
            metrics["novel_still_error_cm"] = 100 * float(targets.norm(dim=-1).mean())
            metrics["novel_targets"] = float(len(keep))
            changes = self.model.adapter_changes() if hasattr(self.model, "adapter_changes") else None
            if changes is not None:
                prs = [participation_ratio(d) for d in changes]
                metrics["adapter_pr_max"] = max(prs)
                metrics["adapter_pr_mean"] = sum(prs) / len(prs)
                metrics["adapter_pr_weights_max"] = max(participation_ratio(w) for w in self.model.adapters.detach())
                overlaps = subspace_overlaps(changes, self.rank_top)
                metrics["adapter_overlap_mean"] = float(overlaps.mean())
                metrics["adapter_overlap_max"] = float(overlaps.max())
                metrics["adapter_overlap_chance"] = self.rank_top / changes.shape[1]
                base = self.model.recurrent.detach().norm()
                metrics["adapter_rel_norm"] = float(changes.flatten(1).norm(dim=1).mean() / base)
        for key, value in metrics.items():
            self.log(f"test/{key}", value, on_step=False, on_epoch=True, batch_size=1)
