"""Latent next-step training and autoregressive rollout evaluation: lgs_pde's solver and its
deterministic baseline, with the same frozen VAE.

The task's `model` is a pretrained autoencoder (`conv_vae`, loaded by `init: {spec: vae.yaml}`),
kept frozen and in eval mode; its encoder means are the latents. They are standardised per
dimension with the mean and standard deviation of the first training batch's latents (kept as
buffers, so a checkpoint carries them). `dynamics` (`latent_transformer`) reads the last `context`
latents and is the only thing trained. A training example is a window of context + 1 frames:

- input noise (the paper's trick): the context latents get N(0, input_noise^2) noise added, the
  target stays clean, so the model learns to pull a perturbed context back towards the data;
- ``flow_matching``: conditional flow matching (components/generative/flow_matching.py, paired
  coupling) from N(0, I) to the increment z_next - z_last given the context; the next latent is
  z_last + the ODE solution after `sample_steps` steps of `solver` from one Gaussian draw;
- ``mse``: the increment is regressed directly (the deterministic latent predictor).

Test examples are whole trajectories: from the true first `context` frames the model rolls out
max(rollout_steps) latents autoregressively (each prediction becomes context), which are decoded
and compared with the true frames: `test/l2re_<k>` is the mean over trajectories of
||u_hat_k - u_k|| / ||u_k|| at step k (L2RE), `test/l2re_<K>_<family>` the last step's per family
and `test/reconstruction_l2re` the VAE's own error on the same frames (the floor of any latent
model). `test/persistence_l2re_<k>` is the trivial answer's L2RE: the last true context frame
repeated (persistence, no model and no VAE), the floor a solver must beat to have learned anything
(`test/persistence_l2re_<K>_<family>` per family).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import lightning as L
import torch
from torch import nn

from components.generative.flow_matching import Solver, flow_matching_loss, integrate
from components.kinds import Model
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeFloat, PositiveInt


def relative_l2(prediction: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """||prediction - truth|| / ||truth|| over the last two dims (channels, grid); (B, K, C, n) -> (B, K)."""
    return (prediction - truth).flatten(2).norm(dim=2) / truth.flatten(2).norm(dim=2).clamp_min(1e-12)


def persistence_l2re(x: torch.Tensor, context: int, horizon: int) -> torch.Tensor:
    """The trivial answer's error: trajectories (B, T, C, n), the last of the first `context` true frames
    repeated for `horizon` steps against the true frames after it; (B, horizon) relative L2 errors."""
    truth = x[:, context:context + horizon]
    return relative_l2(x[:, context - 1:context].expand_as(truth), truth)


class LatentDynamics(L.LightningModule):
    """Train a latent next-step model on a frozen autoencoder's latents; evaluate rollouts (module docstring).

    Args:
        model: The pretrained autoencoder (encode(x) -> (mean, logvar), decode(z)); frozen.
        dynamics: The next-step model f(context, x, t) (`latent_transformer`).
        optimizer: Factory called with the dynamics' parameters.
        scheduler: Learning-rate scheduler factory, or None.
        objective: "flow_matching" (the generative solver) or "mse" (the deterministic predictor).
        input_noise: Standard deviation of the noise added to the standardised context latents in
            training; 0 turns the trick off.
        sample_steps: ODE steps per predicted latent (flow_matching).
        solver: The ODE solver of the sampler: euler, midpoint or rk4.
        rollout_steps: Steps at which the rollout's L2RE is reported; the largest is rolled out.
        eval_seed: Seed of the sampler's Gaussian draws at test time.
    """

    def __init__(self, model: nn.Module, dynamics: Model, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None,
                 objective: Literal["flow_matching", "mse"] = "flow_matching", input_noise: NonNegativeFloat = 0.1,
                 sample_steps: PositiveInt = 8, solver: Solver = "euler",
                 rollout_steps: tuple[PositiveInt, ...] = (1, 5, 10, 20), eval_seed: int = 0) -> None:
        super().__init__()
        if not callable(getattr(model, "encode", None)) or not callable(getattr(model, "decode", None)):
            raise ValueError(f"model must be an autoencoder with encode and decode (e.g. conv_vae), got {type(model).__name__}")
        if objective not in ("flow_matching", "mse"):
            raise ValueError(f"objective must be 'flow_matching' or 'mse', got '{objective}'")
        if not rollout_steps:
            raise ValueError("rollout_steps must name at least one step")
        self.model, self.dynamics = model, dynamics
        self.model.requires_grad_(False)
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.objective, self.input_noise = objective, input_noise
        self.sample_steps, self.solver = sample_steps, solver
        self.rollout_steps, self.eval_seed = tuple(sorted(set(rollout_steps))), eval_seed
        self.context = dynamics.context
        self.register_buffer("latent_mean", torch.zeros(dynamics.latent_dim))
        self.register_buffer("latent_std", torch.ones(dynamics.latent_dim))
        self.register_buffer("stats_ready", torch.tensor(False))

    def train(self, mode: bool = True) -> "LatentDynamics":
        """Train mode for the dynamics only: the frozen autoencoder stays in eval mode."""
        super().train(mode)
        self.model.eval()
        return self

    @torch.no_grad()
    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """(B, W, C, n) frames -> (B, W, latent_dim) standardised latents (encoder means)."""
        mean = self.model.encode(frames.flatten(0, 1))[0]
        return ((mean - self.latent_mean) / self.latent_std).view(*frames.shape[:2], -1)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """(B, K, latent_dim) standardised latents -> (B, K, C, n) frames."""
        fields = self.model.decode((latents * self.latent_std + self.latent_mean).flatten(0, 1))
        return fields.view(*latents.shape[:2], *fields.shape[1:])

    @torch.no_grad()
    def set_latent_stats(self, frames: torch.Tensor) -> None:
        mean = self.model.encode(frames.flatten(0, 1))[0]
        self.latent_mean.copy_(mean.mean(0))
        self.latent_std.copy_(mean.std(0).clamp_min(1e-6))
        self.stats_ready.fill_(True)

    def velocity(self, x: torch.Tensor, t: torch.Tensor, context: torch.Tensor | None) -> torch.Tensor:
        return self.dynamics(context, x, t)

    def loss(self, frames: torch.Tensor, noise: float) -> torch.Tensor:
        """The objective on windows (B, context + 1, C, n), with input noise `noise` on the context."""
        if frames.shape[1] != self.context + 1:
            raise ValueError(f"training windows must hold context + 1 = {self.context + 1} frames, got {frames.shape[1]} "
                             "(data.window)")
        z = self.encode(frames)
        context = z[:, :self.context]
        if noise > 0:
            context = context + noise * torch.randn_like(context)
        increment = z[:, self.context] - context[:, -1]
        if self.objective == "mse":
            return (self.dynamics(context) - increment).pow(2).mean()
        return flow_matching_loss(self.velocity, torch.randn_like(increment), increment, cond=context)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        if not self.stats_ready:
            self.set_latent_stats(batch["x"])
        loss = self.loss(batch["x"], self.input_noise)
        log_loss(self, "train", loss, len(batch["x"]))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        log_loss(self, "val", self.loss(batch["x"], 0.0), len(batch["x"]))

    @torch.no_grad()
    def predict_next(self, context: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The next standardised latent (B, latent_dim) after a context (B, context, latent_dim)."""
        last = context[:, -1]
        if self.objective == "mse":
            return last + self.dynamics(context)
        x0 = torch.randn(last.shape, generator=generator).to(last)
        return last + integrate(self.velocity, x0, steps=self.sample_steps, solver=self.solver, cond=context)

    @torch.no_grad()
    def rollout(self, context: torch.Tensor, steps: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(B, context, latent_dim) -> the next `steps` latents (B, steps, latent_dim), each predicted
        from the last `context` (true, then predicted) latents."""
        predicted = []
        for _ in range(steps):
            nxt = self.predict_next(context, generator)
            predicted.append(nxt)
            context = torch.cat([context[:, 1:], nxt[:, None]], 1)
        return torch.stack(predicted, 1)

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        if not self.stats_ready:
            raise RuntimeError("the latent statistics are set by training; test a trained checkpoint")
        x, horizon = batch["x"], self.rollout_steps[-1]
        if x.shape[1] < self.context + horizon:
            raise ValueError(f"test trajectories hold {x.shape[1]} frames; a rollout of {horizon} steps after "
                             f"{self.context} context frames needs {self.context + horizon} (data.num_frames)")
        generator = torch.Generator().manual_seed(self.eval_seed * 100003 + batch_idx)
        truth = x[:, self.context:self.context + horizon]
        predicted = self.decode(self.rollout(self.encode(x[:, :self.context]), horizon, generator))
        error = relative_l2(predicted, truth)
        persistence = persistence_l2re(x, self.context, horizon)
        size = len(x)
        for k in self.rollout_steps:
            self.log(f"test/l2re_{k}", error[:, k - 1].mean(), on_epoch=True, batch_size=size, sync_dist=True)
            self.log(f"test/persistence_l2re_{k}", persistence[:, k - 1].mean(), on_epoch=True, batch_size=size,
                     sync_dist=True)
        self.log("test/reconstruction_l2re", relative_l2(self.decode(self.encode(truth)), truth).mean(),
                 on_epoch=True, batch_size=size, sync_dist=True)
        self.log_by_family(batch, error[:, -1], horizon)
        self.log_by_family(batch, persistence[:, -1], horizon, "persistence_l2re")

    def log_by_family(self, batch: dict[str, torch.Tensor], error: torch.Tensor, horizon: int,
                      metric: str = "l2re") -> None:
        """test/<metric>_<horizon>_<family> (family names from the data module's `families`)."""
        if "family" not in batch:
            return
        names = getattr(getattr(self.trainer, "datamodule", None), "families", None)
        for index in batch["family"].unique().tolist():
            rows = batch["family"] == index
            name = names[index] if names else f"family{index}"
            self.log(f"test/{metric}_{horizon}_{name}", error[rows].mean(), on_epoch=True,
                     batch_size=int(rows.sum()), sync_dist=True)

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory,
                                 parameters=self.dynamics.parameters())
