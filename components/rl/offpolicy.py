"""Off-policy actor-critic tasks with a replay buffer: `sac` (soft actor-critic, twin Q; with
`replay.relabel: future` it is SAC + HER) and `contrastive_rl` (a contrastive critic, CRL; with
parameter-shared actors and a centralized critic it is MACRL).

The loop is the on-policy tasks' (tasks.py OnPolicy: data `rollouts`, one training step = one
rollout of num_envs whole episodes collected with the current policy, sampled), then the rollout
goes into the replay buffer (`replay:`, a `replay_buffers` node) and `updates` gradient updates
follow, each on `batch_size` transitions drawn from the buffer. So MLflow, checkpoints, sweeps and
claims work unchanged; the episode metrics are logged per rollout (step = rollouts done). Every
arm of a comparison gets the same env steps (data.iterations x num_envs episodes) and the same
gradient updates (iterations x updates x batch_size).

One torch optimizer (the `optimizer:` node) holds the actor's, the critic's and the entropy
temperature's parameters; an update sums the critic loss, the actor loss (the critic's parameters
frozen while it is computed, so it moves only the actor) and the temperature loss, and takes one
step (Adam is per parameter, so this equals three optimizers at the same rate). Lightning counts
one optimizer step per rollout (global_step = rollouts done): the last update of a rollout goes
through Lightning's optimizer, the others step the torch optimizer directly (as in ppo).

Hand-written losses (twenty lines): TorchRL's SACLoss wants TensorDict actors and value
operators (ProbabilisticActor with a TanhNormal, ValueOperator) and a TensorDict batch with a
nested "next"; the policies here keep the plain tensor contract shared with the on-policy tasks
(policies.py), and the contrastive critic has no TorchRL loss. TorchRL's ReplayBuffer and storage
hold the data (replay.py).

Resume: weights, the target critic (a module, in the state_dict), the temperature, the optimizer,
torch's RNG (actions, batch draws), the env's RNG (data module) and the replay buffer's contents
(`on_save_checkpoint` / `on_load_checkpoint`) are in every checkpoint: a resumed run repeats the
same numbers.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import torch

from components.kinds import Kind, Model
from components.rl.replay import GoalLayout
from components.rl.tasks import OnPolicy
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt, Probability

ReplayBuffer = Annotated[Any, Kind("replay_buffers")]


class OffPolicy(OnPolicy):
    """Shared machinery of the off-policy tasks (module docstring)."""

    def __init__(self, model: Model, critic: Model, replay: ReplayBuffer, optimizer: Any = None,
                 updates: PositiveInt = 50, batch_size: PositiveInt = 256, alpha: PositiveFloat = 0.1,
                 learn_alpha: bool = True, target_entropy: float | None = None,
                 max_steps: PositiveInt | None = None, test_greedy: bool = True) -> None:
        super().__init__(model, optimizer, max_steps, test_greedy, None)
        self.critic, self.replay = critic, replay
        self.updates, self.batch_size, self.learn_alpha = updates, batch_size, learn_alpha
        self.target_entropy = target_entropy
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(alpha)), requires_grad=learn_alpha)
        self.layout: GoalLayout | None = None

    def setup(self, stage: str) -> None:
        env = self.trainer.datamodule.env
        space = env.single_observation_space
        goal = isinstance(getattr(space, "spaces", None), dict) and "desired_goal" in space.spaces
        self.layout = GoalLayout(space, env) if goal else None
        self.replay.configure(self.layout)
        if self.target_entropy is None:
            self.target_entropy = -float(sum(env.single_action_space.shape))

    def learns(self) -> bool:
        return self.optimizer_factory is not None

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if not self.learns():
            return super().configure_optimizers()
        params = [*self.model.parameters(), *self.critic.parameters()]
        return self.optimizer_factory(params=params + ([self.log_alpha] if self.learn_alpha else []))

    def training_step(self, batch: Any, batch_idx: int) -> None:
        env = self.trainer.datamodule.env
        episodes = self.collect(env)
        self.replay.add(episodes, self._horizon(env))
        optimizer = self.optimizers()
        if self.learns() and self.replay.ready():
            logs: dict[str, torch.Tensor] = {}
            for i in range(self.updates):
                logs = self.update(self.replay.sample(self.batch_size))
                optimizer.step() if i == self.updates - 1 else optimizer.optimizer.step()
                self.after_update()
            for key, value in logs.items():
                self.log(f"train/{key}", value, on_step=True, batch_size=1)
        else:
            optimizer.step()
        self.rollouts += 1
        for key, value in episodes.metrics().items():
            self.log(f"train/{key}", value, on_step=True, batch_size=1)

    def actor_terms(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dist = self.model.distribution(obs) if hasattr(self.model, "distribution") else self.model(obs, None)[0]
        action = dist.rsample()
        return action, dist.log_prob(action)

    def entropy_terms(self, logp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(alpha detached, the temperature's loss)."""
        alpha = self.log_alpha.exp()
        loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean() if self.learn_alpha else torch.zeros(())
        return alpha.detach(), loss

    @contextlib.contextmanager
    def frozen_critic(self) -> Iterator[None]:
        """The critic's parameters without gradients (the actor's loss moves only the actor)."""
        params = list(self.critic.parameters())
        for p in params:
            p.requires_grad_(False)
        try:
            yield
        finally:
            for p in params:
                p.requires_grad_(True)

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def after_update(self) -> None:
        pass

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["replay_buffer"] = self.replay.state_dict()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if "replay_buffer" in checkpoint:
            self.replay.load_state_dict(checkpoint["replay_buffer"])


class SAC(OffPolicy):
    """Soft actor-critic (Haarnoja et al. 2018): twin Q critics with Polyak-averaged targets,
    target r + gamma (1 - terminal) (min_i Q'_i(s', a') - alpha log pi(a'|s')), the actor
    maximizing min_i Q_i(s, a) - alpha log pi(a|s), a learned (or fixed) temperature alpha toward
    `target_entropy`. Goal envs: rewards come from the env's compute_reward on the (maybe
    relabelled, `replay.relabel: future` = HER) goal; without relabelling, the sparse task reward.

    Args:
        model: The actor (e.g. shared_gaussian_actor).
        critic: Twin Q (twin_q).
        replay: The replay buffer (episode_replay; its relabel option is HER).
        optimizer: One optimizer for actor, critic and temperature (null: no updates).
        updates: Gradient updates per rollout.
        batch_size: Transitions per update.
        gamma: Discount.
        tau: Polyak rate of the target critic.
        alpha: Initial (or fixed) entropy temperature.
        learn_alpha: Learn alpha toward target_entropy (default -joint action dims).
        target_entropy: The temperature's target (null: -action dims).
        max_steps: Cap on steps per episode (default: the env's).
        test_greedy: Test with the mean action (tanh of the Gaussian's mean).
    """

    def __init__(self, model: Model, critic: Model, replay: ReplayBuffer, optimizer: Any = None,
                 updates: PositiveInt = 50, batch_size: PositiveInt = 256, gamma: Probability = 0.99,
                 tau: Probability = 0.005, alpha: PositiveFloat = 0.1, learn_alpha: bool = True,
                 target_entropy: float | None = None, max_steps: PositiveInt | None = None,
                 test_greedy: bool = True) -> None:
        super().__init__(model, critic, replay, optimizer, updates, batch_size, alpha, learn_alpha,
                         target_entropy, max_steps, test_greedy)
        self.gamma, self.tau = gamma, tau
        self.target = copy.deepcopy(critic).requires_grad_(False)

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs, action, next_obs = batch["obs"], batch["action"], batch["next_obs"]
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_action, next_logp = self.actor_terms(next_obs)
            q1t, q2t = self.target(next_obs, next_action)
            target = batch["reward"] + self.gamma * (~batch["terminal"]).float() * (torch.minimum(q1t, q2t) - alpha * next_logp)
        q1, q2 = self.critic(obs, action)
        critic_loss = 0.5 * ((q1 - target) ** 2).mean() + 0.5 * ((q2 - target) ** 2).mean()
        new_action, logp = self.actor_terms(obs)
        with self.frozen_critic():
            q_new = torch.minimum(*self.critic(obs, new_action))
        actor_loss = (alpha * logp - q_new).mean()
        _, alpha_loss = self.entropy_terms(logp)
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(critic_loss + actor_loss + alpha_loss)
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(), "alpha": alpha,
                "loss": (critic_loss + actor_loss).detach()}

    def after_update(self) -> None:
        with torch.no_grad():
            torch._foreach_lerp_(list(self.target.parameters()), list(self.critic.parameters()), self.tau)


class ContrastiveRL(OffPolicy):
    """Contrastive RL (Eysenbach et al. 2022; JaxGCRL): the critic f(s, a, g) (contrastive_critic)
    is trained by InfoNCE over the batch: for transition i, the positive goal is the goal achieved
    at a future step of the same trajectory (the replay's future_obs), the other transitions'
    future goals are the negatives: loss = CE(logits_i, i) + logsumexp_coef x mean_i
    (logsumexp_j f(s_i, a_i, g_j))^2. No task reward is used. The actor maximizes
    f(s, pi(s, g), g) - alpha log pi at goal g: `actor_goal: future` (CRL: the same future goals,
    so the actor learns to reach states it has seen reached) or `commanded` (the episode's desired
    goal). With the shared actor and a critic over the joint state and action it is MACRL.

    Args:
        model: The actor (shared_gaussian_actor).
        critic: The contrastive critic (contrastive_critic).
        replay: The replay buffer (episode_replay; relabel is not used: positives are always future goals).
        optimizer, updates, batch_size, alpha, learn_alpha, target_entropy, max_steps, test_greedy: As in sac.
        logsumexp_coef: Weight of the logsumexp regulariser.
        actor_goal: future or commanded.
    """

    def __init__(self, model: Model, critic: Model, replay: ReplayBuffer, optimizer: Any = None,
                 updates: PositiveInt = 50, batch_size: PositiveInt = 256, alpha: PositiveFloat = 0.1,
                 learn_alpha: bool = True, target_entropy: float | None = None,
                 logsumexp_coef: NonNegativeFloat = 0.1, actor_goal: Literal["future", "commanded"] = "future",
                 max_steps: PositiveInt | None = None, test_greedy: bool = True) -> None:
        super().__init__(model, critic, replay, optimizer, updates, batch_size, alpha, learn_alpha,
                         target_entropy, max_steps, test_greedy)
        if actor_goal not in ("future", "commanded"):
            raise ValueError(f"actor_goal must be future or commanded, got {actor_goal!r}")
        self.logsumexp_coef, self.actor_goal = logsumexp_coef, actor_goal

    def setup(self, stage: str) -> None:
        super().setup(stage)
        if self.layout is None:
            raise ValueError("contrastive_rl needs a goal env (dict observation with achieved/desired goals)")

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        lay = self.layout
        obs = batch["obs"]
        state, goal = lay.state(obs), lay.achieved(batch["future_obs"])
        logits = self.critic.logits(state, batch["action"], goal)
        labels = torch.arange(len(logits))
        nce = torch.nn.functional.cross_entropy(logits, labels)
        lse = (torch.logsumexp(logits, 1) ** 2).mean()
        critic_loss = nce + self.logsumexp_coef * lse
        actor_goal = goal if self.actor_goal == "future" else lay.desired(obs)
        actor_obs = lay.with_goal(obs, actor_goal)
        new_action, logp = self.actor_terms(actor_obs)
        alpha = self.log_alpha.exp().detach()
        with self.frozen_critic():
            f = self.critic(state, new_action, actor_goal)
        actor_loss = (alpha * logp - f).mean()
        _, alpha_loss = self.entropy_terms(logp)
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(critic_loss + actor_loss + alpha_loss)
        accuracy = (logits.argmax(1) == labels).float().mean()
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(), "alpha": alpha,
                "contrastive_accuracy": accuracy, "loss": (critic_loss + actor_loss).detach()}
