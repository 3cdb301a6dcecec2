"""Minimal-change editing as reinforcement learning: a latent edit policy trained by group-
normalised policy gradient against an edit reward.

Paper: minchange_edit (NeurIPS 2026; specs/minchange_edit/README.md): the editor is RL fine-tuned
against a reward = implemented change - lambda x unintended change, instead of regularising the
latent difference with an L1 penalty. At tiny scale the editor is a Gaussian policy over the
latent edit of a frozen autoencoder (`editing_world`, weights from `init:`):

    a ~ N(mu(z, c), diag(sigma^2)),   edited = decode(z + s * a),   z = encode(x),

c the instruction (one-hot of its (factor, value) pair), m and s the per-dimension mean and
standard deviation of the training latents (measured at the start of fit: actions are in units
of the latent's spread), mu an MLP of ((z - m) / s, c) whose last layer starts at zero (the first
edits are the identity plus exploration noise), and sigma a fixed exploration scale. Each step draws `group_size` actions per (image,
instruction) and scores them with the reward (`reward:`, components/editing/rewards.py) of the
oracle's judgement (components/editing/oracle.py, source = decode(z)). Advantages are normalised
within each group, A_i = (r_i - mean(r)) / (std(r) + 1e-4) (GRPO, Shao et al. 2024); one update
per group, so the clipped importance ratio of GRPO is 1 and the loss is -mean(A_i log pi(a_i)).
The L1 latent-difference baseline adds `latent_l1_weight` x mean ||s * mu||_1 (the regulariser of
the causal-representation line, on the edit's latent difference).

Tested (and logged as `test/...`) with the deterministic edit a = mu over the test images:
`edit_success`, `unintended_rate` (share of the other four factors whose oracle reading moved),
`outside_mask_change` (mean absolute pixel change, per channel, outside the union of the object's
masks before and after the asked edit), `latent_l1` (||s * mu||_1), `reward`. Per step:
`train/loss`, `train/reward`, `train/edit_success`, `train/unintended_rate` of the sampled group.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

import lightning as L
import numpy as np
import torch
from torch import nn

from components.editing.oracle import judge
from components.editing.shapes import CARDINALITIES
from components.editing.world import EditingWorld
from components.kinds import Kind
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt

Reward = Annotated[Any, Kind("edit_rewards")]
NUM_INSTRUCTIONS = sum(CARDINALITIES)
OFFSETS = tuple(int(v) for v in np.cumsum((0,) + CARDINALITIES[:-1]))


def instruction_onehot(edit_factor: torch.Tensor, edit_value: torch.Tensor) -> torch.Tensor:
    """(B,) factors and values -> (B, 14) one-hot of the (factor, value) pair."""
    offsets = torch.tensor(OFFSETS, device=edit_factor.device)
    return nn.functional.one_hot(offsets[edit_factor] + edit_value, NUM_INSTRUCTIONS).float()


def group_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(G, B) rewards of G actions for each of B inputs -> advantages normalised within each
    column: (r - mean) / (std + 1e-4), std the unbiased standard deviation of the G rewards."""
    return (rewards - rewards.mean(0)) / (rewards.std(0) + 1e-4)


class LatentEditPolicy(nn.Module):
    """Gaussian policy over latent edits: mean MLP(standardised z, instruction), fixed sigma.

    Args:
        latent_dim: D, the latent width.
        hidden: Width of the two hidden layers.
        std: sigma, the exploration scale (in units of the latent's spread).
    """

    def __init__(self, latent_dim: int, hidden: int, std: float) -> None:
        super().__init__()
        self.mean = nn.Sequential(nn.Linear(latent_dim + NUM_INSTRUCTIONS, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, latent_dim))
        nn.init.zeros_(self.mean[-1].weight)
        nn.init.zeros_(self.mean[-1].bias)
        self.std = std

    def forward(self, z: torch.Tensor, instruction: torch.Tensor) -> torch.distributions.Normal:
        """z standardised (B, D), instruction one-hot (B, 14) -> N(mu, sigma^2 I) over actions."""
        return torch.distributions.Normal(self.mean(torch.cat([z, instruction], 1)), self.std)


class LatentEditRL(L.LightningModule):
    """Group-normalised policy gradient for latent edits (module docstring).

    Args:
        model: The frozen `editing_world` (runtime, from `model:`; weights from `init:`).
        optimizer: Factory called with the policy's parameters.
        reward: The edit reward (`minimal_change` or `edit_only`).
        scheduler: Learning-rate scheduler factory, or None.
        group_size: Actions drawn per (image, instruction); their rewards normalise each other.
        hidden: Width of the policy's hidden layers.
        std: The policy's exploration sigma, in units of the latent's spread.
        latent_l1_weight: Weight of the L1 latent-difference penalty (the baseline; 0: off).
        scale_images: Training images encoded to estimate the latent's spread s.
    """

    LOGGED_METRICS = ("train/loss", "train/reward", "train/edit_success", "train/unintended_rate",
                      "{split}/edit_success", "{split}/unintended_rate", "{split}/outside_mask_change",
                      "{split}/latent_l1", "{split}/reward")

    def __init__(
        self,
        model: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer],
        reward: Reward,
        scheduler: Callable[..., dict[str, Any]] | None = None,
        group_size: PositiveInt = 8,
        hidden: PositiveInt = 64,
        std: PositiveFloat = 1.0,
        latent_l1_weight: NonNegativeFloat = 0.0,
        scale_images: PositiveInt = 512,
    ) -> None:
        super().__init__()
        if not isinstance(model, EditingWorld):
            raise ValueError(f"latent_edit_rl edits in an editing_world, got {type(model).__name__}")
        if group_size < 2:
            raise ValueError(f"group_size must be >= 2 (advantages are normalised within a group), got {group_size}")
        if not callable(reward):
            raise ValueError(f"reward must be callable as reward(implemented, unintended), got {type(reward).__name__}")
        self.model, self.reward = model.requires_grad_(False).eval(), reward
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.group_size, self.latent_l1_weight, self.scale_images = group_size, latent_l1_weight, scale_images
        self.hidden, self.std = hidden, std
        self.policy: LatentEditPolicy | None = None
        self.register_buffer("latent_mean", torch.zeros(0))
        self.register_buffer("latent_scale", torch.ones(0))

    # -- setup ----------------------------------------------------------------------------------

    def setup(self, stage: str) -> None:
        """Build the policy at the world's latent width, and measure the latent's spread s."""
        if self.policy is not None:
            return
        images = self.trainer.datamodule.split("train")["x"][: self.scale_images]
        with torch.no_grad():
            latents = self.model.encode(images)
        self.latent_mean, self.latent_scale = latents.mean(0), latents.std(0).clamp_min(1e-6)
        self.policy = LatentEditPolicy(latents.shape[1], self.hidden, self.std)

    def train(self, mode: bool = True) -> "LatentEditRL":
        super().train(mode)
        self.model.eval()  # frozen: no dropout or batch-norm updates, ever
        return self

    # -- steps ----------------------------------------------------------------------------------

    def _source(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.distributions.Normal]:
        """(latents z, decoded sources, the policy's action distribution) of a batch."""
        with torch.no_grad():
            z = self.model.encode(batch["x"])
            source = self.model.decode(z)
        instruction = instruction_onehot(batch["edit_factor"], batch["edit_value"])
        return z, source, self.policy((z - self.latent_mean) / self.latent_scale, instruction)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        z, source, policy = self._source(batch)
        actions = policy.sample((self.group_size,))  # (G, B, D)
        g, b, d = actions.shape
        with torch.no_grad():
            edited = self.model.decode((z + self.latent_scale * actions).reshape(g * b, d))
            verdict = judge(self.model.oracle, source.repeat(g, 1, 1, 1), edited,
                            batch["edit_factor"].repeat(g), batch["edit_value"].repeat(g))
            rewards = self.reward(verdict["implemented"], verdict["unintended"]).view(g, b)
            advantages = group_advantages(rewards)
        loss = -(advantages * policy.log_prob(actions).sum(-1)).mean()
        if self.latent_l1_weight > 0:
            loss = loss + self.latent_l1_weight * (self.latent_scale * policy.mean).abs().sum(1).mean()
        log_loss(self, "train", loss, b)
        for name, value in (("reward", rewards.mean()), ("edit_success", verdict["success"].mean()),
                            ("unintended_rate", verdict["unintended_rate"].mean())):
            self.log(f"train/{name}", value, on_step=True, on_epoch=False, batch_size=b)
        return loss

    def _evaluate(self, batch: dict[str, torch.Tensor], split: str) -> None:
        z, source, policy = self._source(batch)
        delta = self.latent_scale * policy.mean
        edited = self.model.decode(z + delta)
        verdict = judge(self.model.oracle, source, edited, batch["edit_factor"], batch["edit_value"])
        outside = 1 - batch["mask"]
        change = ((edited - source).abs() * outside).sum((1, 2, 3)) / (outside.sum((1, 2, 3)) * edited.shape[1]).clamp_min(1)
        values = {"edit_success": verdict["success"], "unintended_rate": verdict["unintended_rate"],
                  "outside_mask_change": change, "latent_l1": delta.abs().sum(1),
                  "reward": self.reward(verdict["implemented"], verdict["unintended"])}
        for name, value in values.items():
            self.log(f"{split}/{name}", value.mean(), on_epoch=True, batch_size=len(z))

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate(batch, "test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.policy.parameters())
