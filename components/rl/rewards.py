"""Learned rewards (`reward_models` kind).

`visitation_matching` (dense_reward, "success visitation matching"): a discriminator between the
states visited by successful and by failed episodes gives the dense reward

    r~(s_t, a_t, s_{t+1}) = beta * log( d+(s_{t+1}) / d-(s_{t+1}) ),

the log density ratio of the state reached under the success and failure visitation
distributions, added to the sparse outcome. Here the discriminator is tabular (the observations
must be one-hot cells, e.g. slippery_grid): d+- are the visit counts of all previous successful
(failed) episodes, Laplace-smoothed, (n+-(s) + alpha) / (N+- + alpha S); with a discriminator
D(s) = P(success | s) on balanced classes, log D/(1 - D) is the same ratio. The reward of a
rollout uses the counts of the rollouts before it (`observe` is called after the update), so
rollout 1 gets 0 everywhere. NOTES.md's design: "smoothed success/failure visitation
densities; beta = 0.1". Deviation: the paper matches state-action visitations with a learned
network; the tabular state-only ratio is our tiny-scale stand-in (`estimator: logistic` is a
learned discriminator on any observation vectors, for larger envs).

`shuffle_labels: true` is the control: the outcome labels of each rollout are permuted among its
episodes before counting (same number of successes, no information in which episode succeeded),
so the "discriminator" learns nothing about success.

`form: potential` is the shaping that provably keeps the optimal policy (potential-based, Ng et
al. 1999) with Phi = the log ratio; with Monte Carlo returns at gamma = 1 it telescopes to a
state-dependent baseline -beta Phi(s_t) (no new credit, only variance reduction). The additive
form (the default) gives each action the log ratios of every later state: dense credit, but it
also pays for time spent in success-like states, which can change the optimal policy when that
outweighs the sparse outcome.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.rl.rollout import Episodes
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt


class VisitationMatching(nn.Module):
    """Success-visitation-matching reward (module docstring).

    Args:
        num_states: counts: width of the one-hot observations (cells); logistic: the flat
            observation width.
        beta: Weight of the log density ratio.
        smoothing: Laplace pseudo-count alpha per state (counts).
        shuffle_labels: The control: permute each rollout's outcome labels before learning.
        form: `additive` (default, the paper's and NOTES.md's): beta Phi(s_{t+1}), Phi = the log
            ratio; `potential`: beta (Phi(s_{t+1}) - Phi(s_t)) with Phi = 0 after an episode's last
            step (Ng et al.'s policy-invariant shaping; module docstring).
        estimator: `counts` (tabular, one-hot states) or `logistic`: an MLP discriminator D(s)
            trained by class-balanced cross-entropy (successful episodes' states 1, failed 0), whose
            logit is then log d+(s)/d-(s); `steps` Adam steps at `lr` per rollout with both
            outcomes (its optimizer state is part of the checkpoint).
        hidden, lr, steps: The logistic discriminator's widths, learning rate and steps per rollout.
    """

    def __init__(self, num_states: PositiveInt, beta: NonNegativeFloat = 0.1, smoothing: PositiveFloat = 1.0,
                 shuffle_labels: bool = False, form: Literal["additive", "potential"] = "additive",
                 estimator: Literal["counts", "logistic"] = "counts", hidden: tuple[PositiveInt, ...] = (64,),
                 lr: PositiveFloat = 1e-3, steps: PositiveInt = 5) -> None:
        super().__init__()
        if form not in ("potential", "additive"):
            raise ValueError(f"form must be potential or additive, got {form!r}")
        if estimator not in ("counts", "logistic"):
            raise ValueError(f"estimator must be counts or logistic, got {estimator!r}")
        self.form, self.estimator = form, estimator
        self.beta, self.smoothing, self.shuffle_labels = beta, smoothing, shuffle_labels
        self.register_buffer("success_counts", torch.zeros(num_states))
        self.register_buffer("failure_counts", torch.zeros(num_states))
        if estimator == "logistic":
            layers: list[nn.Module] = []
            width = num_states
            for h in hidden:
                layers += [nn.Linear(width, h), nn.Tanh()]
                width = h
            self.net = nn.Sequential(*layers, nn.Linear(width, 1))
            self.steps = steps
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
            self.register_buffer("trained", torch.zeros(()))

    # the logistic discriminator's optimizer state travels with the task's state_dict (checkpoints)
    def get_extra_state(self):
        return {"optimizer": self.optimizer.state_dict()} if self.estimator == "logistic" else None

    def set_extra_state(self, state) -> None:
        if state is not None and self.estimator == "logistic":
            self.optimizer.load_state_dict(state["optimizer"])

    def _cells(self, states: torch.Tensor) -> torch.Tensor:
        if states.shape[-1] != self.success_counts.numel():
            raise ValueError(f"visitation_matching has num_states = {self.success_counts.numel()} but the "
                             f"observations have width {states.shape[-1]}")
        if not torch.all((states.sum(-1) - 1).abs() < 1e-6):
            raise ValueError("visitation_matching counts cells: it needs one-hot observations "
                             "(e.g. slippery_grid with observation: onehot), or estimator: logistic")
        return states.argmax(-1)

    def log_ratio(self) -> torch.Tensor:
        """log d+(s) - log d-(s) per state (S,) (counts)."""
        a, S = self.smoothing, self.success_counts.numel()
        plus = (self.success_counts + a) / (self.success_counts.sum() + a * S)
        minus = (self.failure_counts + a) / (self.failure_counts.sum() + a * S)
        return plus.log() - minus.log()

    def potential(self, states: torch.Tensor) -> torch.Tensor:
        """Phi(s) = log d+(s)/d-(s) for states (..., D)."""
        if self.estimator == "counts":
            return self.log_ratio()[self._cells(states)]
        if not self.trained:
            return torch.zeros(states.shape[:-1])
        with torch.no_grad():
            return self.net(states).squeeze(-1)

    def forward(self, episodes: Episodes) -> torch.Tensor:
        after = self.potential(episodes.states_after) * episodes.alive
        if self.form == "additive":
            return self.beta * after
        before = self.potential(episodes.obs[:, :-1]) * episodes.alive
        after = after * ~episodes.done()  # the potential is 0 once an episode has ended
        return self.beta * (after - before)

    def observe(self, episodes: Episodes) -> None:
        labels = episodes.success
        if self.shuffle_labels:
            labels = labels[torch.randperm(len(labels))]
        if self.estimator == "logistic":
            self._fit(episodes.states_after, episodes.alive, labels)
            return
        cells = self._cells(episodes.states_after)
        visits = torch.zeros(len(labels), self.success_counts.numel())
        visits.scatter_add_(1, cells, episodes.alive.float())
        self.success_counts += visits[labels].sum(0)
        self.failure_counts += visits[~labels].sum(0)

    def _fit(self, states: torch.Tensor, alive: torch.Tensor, labels: torch.Tensor) -> None:
        """Class-balanced logistic regression steps on this rollout's visited states."""
        if labels.all() or not labels.any():
            return  # one outcome only: no ratio to learn from this rollout
        x = states[alive]
        y = labels[:, None].expand_as(alive)[alive].float()
        weight = torch.where(y > 0, 0.5 / y.sum(), 0.5 / (1 - y).sum())
        with torch.enable_grad():
            for _ in range(self.steps):
                logit = self.net(x).squeeze(-1)
                loss = (weight * nn.functional.binary_cross_entropy_with_logits(logit, y, reduction="none")).sum()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        self.trained.fill_(1.0)
