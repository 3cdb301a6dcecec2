"""On-policy RL tasks as Lightning modules: rollouts are collected inside the training loop.

The spec names three sections: `data: {type: rollouts, env: {...}, iterations: N}` (the env as
data; its loader yields step indices, components/rl/data.py), `model:` a policy (`models` kind,
contract in components/rl/policies.py) and `task:` one of

- `reinforce`: REINFORCE with a baseline (`baseline: mean`, the batch's mean return-to-go at the
  same time step; `value`, the policy's critic, fitted by MSE; or `none`);
- `ppo`: PPO with the clipped surrogate and GAE(gamma, lambda), `epochs` passes over the rollout
  in `minibatches` minibatches of whole episodes (a recurrent policy is re-run over them);
- `behavior_cloning`: cross-entropy to a `teacher` policy's actions on the teacher's own episodes
  (e.g. the weak pretrained policy of dense_reward; the teacher is any policy, a heuristic too).

Each training step = one rollout of env.num_envs whole episodes (components/rl/rollout.py), then
the update(s); logged per step like any metric: train/episode_return, train/success_rate,
train/episode_length (the environment's reward and outcome), train/loss, and with a `reward:`
model train/shaped_return. The test phase runs `test_batches` rollouts on the test env (the same
policy, sampled; `test_greedy: true` takes the argmax) and logs test/episode_return,
test/success_rate, test/episode_length (means over all test episodes). `optimizer: null` (or a
policy without parameters, e.g. a fixed heuristic) trains nothing: the run still collects its
rollouts and logs them, so a heuristic and a learned policy are measured by the same task.

Action masks (info['action_mask'] or an `action_mask` observation key) set the masked logits to
-inf while collecting and in the loss. Optional `reward:` (`reward_models` kind, e.g.
visitation_matching): its per-step reward is added to the environment's before computing returns,
with the model's state learned from the outcome-labelled episodes after each rollout.

From TorchRL: returns-to-go (`reward2go`) and GAE (`generalized_advantage_estimate`) of
torchrl.objectives.value.functional. Hand-written, and why: the policy-gradient and clipped PPO
losses (TorchRL's ReinforceLoss/ClipPPOLoss need a TensorDict ProbabilisticActor and a flat
transition batch; masked logits and a GRU re-run over whole episodes do not fit without wrapping
every policy in tensordict modules, for a loss of five lines); episode collection (rollout.py).
No replay buffer: on-policy data is used once (PPO's epochs reuse the one rollout in memory).

Optimizer steps: Lightning counts one step per rollout (global_step = rollouts done, the step of
every logged metric); PPO's inner minibatch updates step the torch optimizer directly, the last
one through Lightning. Resume: weights, optimizer, reward-model buffers, torch's RNG (action
draws) and the env's RNG (data module) are all in the checkpoint: a resumed run repeats the same
numbers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import lightning as L
import torch

from components.kinds import Kind, Model
from components.rl.rollout import Episodes, action_distribution, collect
from components.tasks.loop import IterationStep
from components.types import NonNegativeFloat, PositiveInt, Probability

RewardModel = Annotated[Any, Kind("reward_models")]


def _torchrl_functional() -> Any:
    from framework.extras import require

    return require("torchrl.objectives.value.functional", "the rl tasks' returns and advantages")


class OnPolicy(L.LightningModule):
    """Shared machinery of the on-policy tasks (module docstring)."""

    def __init__(self, model: Model, optimizer: Any = None, max_steps: PositiveInt | None = None,
                 test_greedy: bool = False, reward: RewardModel | None = None) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.model, self.optimizer_factory, self.reward = model, optimizer, reward
        self.max_steps, self.test_greedy = max_steps, test_greedy
        self.register_buffer("rollouts", torch.zeros(1))  # rollouts collected in training

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        n = model_args.get("num_actions")
        if n is not None and "num_actions" in info and n != info["num_actions"]:
            return [("num_actions", f"is {n} but the env has {info['num_actions']} actions")]
        return []

    # --- the loop ----------------------------------------------------------------------------
    def learns(self) -> bool:
        return self.optimizer_factory is not None and any(p.requires_grad for p in self.model.parameters())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.learns():
            return self.optimizer_factory(params=[p for p in self.model.parameters() if p.requires_grad])
        return IterationStep([self.rollouts])

    def _horizon(self, env: Any) -> int:
        horizon = self.max_steps or getattr(env, "max_episode_steps", None)
        if not horizon:
            raise ValueError("the env has no max_episode_steps: set task.max_steps")
        return int(horizon)

    def collect(self, env: Any, greedy: bool = False) -> Episodes:
        was = self.model.training
        self.model.eval()
        try:
            return collect(env, self.model, self._horizon(env), greedy)
        finally:
            self.model.train(was)

    def training_step(self, batch: Any, batch_idx: int) -> None:
        episodes = self.collect(self.trainer.datamodule.env)
        rewards = episodes.rewards
        if self.reward is not None:
            extra = self.reward(episodes) * episodes.alive
            rewards = rewards + extra
            self.log("train/shaped_return", (rewards * episodes.alive).sum(1).mean(), on_step=True, batch_size=1)
        optimizer = self.optimizers()
        if self.learns():
            loss = self.update(episodes, rewards, optimizer)
            self.log("train/loss", loss, on_step=True, prog_bar=True, batch_size=1)
        else:
            optimizer.step()
        if self.reward is not None:
            self.reward.observe(episodes)
        self.rollouts += 1
        for key, value in episodes.metrics().items():
            self.log(f"train/{key}", value, on_step=True, batch_size=1)

    def update(self, episodes: Episodes, rewards: torch.Tensor, optimizer: Any) -> torch.Tensor:
        raise NotImplementedError

    def test_step(self, batch: Any, batch_idx: int) -> None:
        env = self.trainer.datamodule.test_env
        episodes = self.collect(env, greedy=self.test_greedy)
        size = len(episodes.success)
        for key, value in episodes.metrics().items():
            self.log(f"test/{key}", value, on_step=False, on_epoch=True, batch_size=size)

    # --- shared pieces -----------------------------------------------------------------------
    def replay(self, episodes: Episodes, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Re-run the policy over episodes `rows` from their start: (log-probs of the taken
        actions (b, T), entropies (b, T), values (b, T) or None), with gradients."""
        obs, actions = episodes.obs[rows], episodes.actions[rows]
        b, T = actions.shape[:2]
        masks = episodes.masks[rows] if episodes.masks is not None else None
        recurrent = getattr(self.model, "initial_state", None) and self.model.initial_state(1) is not None
        if recurrent:
            state = self.model.initial_state(len(rows))
            logps, entropies, values_t = [], [], []
            for t in range(T):
                out, value, state = self.model(obs[:, t], state)
                dist = action_distribution(out, masks[:, t] if masks is not None else None)
                logps.append(dist.log_prob(actions[:, t]))
                entropies.append(dist.entropy())
                values_t.append(value)
            values = torch.stack(values_t, 1) if values_t[0] is not None else None
            return torch.stack(logps, 1), torch.stack(entropies, 1), values
        d = obs.shape[-1]
        out, values, _ = self.model(obs[:, :T].reshape(b * T, d), None)
        dist = action_distribution(out, masks.reshape(b * T, -1) if masks is not None else None)
        flat = actions.reshape(b * T, *actions.shape[2:])
        values = values.reshape(b, T) if values is not None else None
        return dist.log_prob(flat).reshape(b, T), dist.entropy().reshape(b, T), values

    @staticmethod
    def returns(rewards: torch.Tensor, episodes: Episodes, gamma: float) -> torch.Tensor:
        """Discounted returns-to-go (B, T) within each episode (TorchRL's reward2go)."""
        F = _torchrl_functional()
        done = episodes.done() | ~episodes.alive
        return F.reward2go((rewards * episodes.alive)[..., None], done[..., None], gamma)[..., 0]


def _masked_mean(x: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    return (x * alive).sum() / alive.sum().clamp_min(1)


class Reinforce(OnPolicy):
    """REINFORCE with a baseline: loss = -sum_t (G_t - b_t) log pi(a_t|s_t), summed over each
    episode's steps and averaged over the rollout's episodes; minus entropy_coef x the mean entropy.

    Args:
        model: The policy.
        optimizer: Its optimizer (null: no updates, the policy is only run and measured).
        gamma: Discount.
        baseline: `mean` (the rollout's mean return-to-go at the same step, over the episodes
            alive there), `value` (the policy's critic, trained with value_coef x MSE), `none`.
        entropy_coef: Weight of the entropy bonus.
        value_coef: Weight of the critic's loss (baseline: value).
        max_steps: Cap on steps per episode (default: the env's max_episode_steps).
        test_greedy: Test with the argmax action instead of a sampled one.
        reward: A reward model whose reward is added to the env's (e.g. visitation_matching).
    """

    def __init__(self, model: Model, optimizer: Any = None, gamma: Probability = 1.0,
                 baseline: Literal["mean", "value", "none"] = "mean", entropy_coef: NonNegativeFloat = 0.0,
                 value_coef: NonNegativeFloat = 0.5, max_steps: PositiveInt | None = None,
                 test_greedy: bool = False, reward: RewardModel | None = None) -> None:
        super().__init__(model, optimizer, max_steps, test_greedy, reward)
        if baseline not in ("mean", "value", "none"):
            raise ValueError(f"baseline must be mean, value or none, got {baseline!r}")
        self.gamma, self.baseline, self.entropy_coef, self.value_coef = gamma, baseline, entropy_coef, value_coef

    def update(self, episodes: Episodes, rewards: torch.Tensor, optimizer: Any) -> torch.Tensor:
        alive = episodes.alive.float()
        G = self.returns(rewards, episodes, self.gamma)
        logp, entropy, values = self.replay(episodes, torch.arange(len(alive)))
        value_loss = torch.zeros(())
        if self.baseline == "mean":
            b = (G * alive).sum(0) / alive.sum(0).clamp_min(1)
            advantage = G - b
        elif self.baseline == "value":
            if values is None:
                raise ValueError("baseline: value needs a policy with a critic (value is None)")
            advantage = G - values.detach()
            value_loss = _masked_mean((values - G) ** 2, alive)
        else:
            advantage = G
        pg = -(advantage * logp * alive).sum(1).mean()
        loss = pg - self.entropy_coef * _masked_mean(entropy, alive) + self.value_coef * value_loss
        optimizer.zero_grad()
        self.manual_backward(loss)
        optimizer.step()
        return loss.detach()


class PPO(OnPolicy):
    """PPO with the clipped surrogate (Schulman et al. 2017) and GAE advantages, normalized per
    rollout; the critic fitted to the GAE returns; an entropy bonus.

    Args:
        model: The policy with a critic (value must not be None).
        optimizer: Its optimizer (null: no updates).
        gamma, gae_lambda: Discount and GAE's lambda.
        clip: The ratio's clip range epsilon.
        epochs: Passes over each rollout.
        minibatches: Minibatches per pass (of whole episodes; at most num_envs).
        value_coef, entropy_coef: Weights of the critic's loss and the entropy bonus.
        max_grad_norm: Gradient-norm clip (0: none).
        max_steps, test_greedy, reward: As in reinforce.
    """

    def __init__(self, model: Model, optimizer: Any = None, gamma: Probability = 0.99,
                 gae_lambda: Probability = 0.95, clip: Probability = 0.2, epochs: PositiveInt = 4,
                 minibatches: PositiveInt = 4, value_coef: NonNegativeFloat = 0.5,
                 entropy_coef: NonNegativeFloat = 0.01, max_grad_norm: NonNegativeFloat = 0.5,
                 max_steps: PositiveInt | None = None, test_greedy: bool = False,
                 reward: RewardModel | None = None) -> None:
        super().__init__(model, optimizer, max_steps, test_greedy, reward)
        self.gamma, self.lam, self.clip, self.epochs, self.minibatches = gamma, gae_lambda, clip, epochs, minibatches
        self.value_coef, self.entropy_coef, self.max_grad_norm = value_coef, entropy_coef, max_grad_norm

    def advantages(self, episodes: Episodes, rewards: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE (TorchRL's generalized_advantage_estimate) and the value targets, (B, T) each."""
        if episodes.values is None:
            raise ValueError("ppo needs a policy with a critic (value is None)")
        F = _torchrl_functional()
        values = episodes.values
        done = episodes.done() | ~episodes.alive
        terminated = (episodes.done() & episodes.terminated[:, None]) | ~episodes.alive
        adv, target = F.generalized_advantage_estimate(
            self.gamma, self.lam, values[:, :-1, None], values[:, 1:, None], (rewards * episodes.alive)[..., None],
            done[..., None], terminated[..., None])
        return adv[..., 0], target[..., 0]

    def update(self, episodes: Episodes, rewards: torch.Tensor, optimizer: Any) -> torch.Tensor:
        adv, target = self.advantages(episodes, rewards)
        alive = episodes.alive.float()
        mean = _masked_mean(adv, alive)
        std = _masked_mean((adv - mean) ** 2, alive).sqrt()
        adv = (adv - mean) / (std + 1e-8)
        B = len(alive)
        parts = min(self.minibatches, B)
        total = self.epochs * parts
        done, last = 0, torch.zeros(())
        for _ in range(self.epochs):
            for rows in torch.randperm(B).chunk(parts):
                logp, entropy, values = self.replay(episodes, rows)
                a, m = adv[rows], alive[rows]
                ratio = torch.exp(logp - episodes.log_probs[rows])
                surrogate = torch.minimum(ratio * a, ratio.clamp(1 - self.clip, 1 + self.clip) * a)
                loss = (-_masked_mean(surrogate, m) + self.value_coef * _masked_mean((values - target[rows]) ** 2, m)
                        - self.entropy_coef * _masked_mean(entropy, m))
                optimizer.zero_grad()
                self.manual_backward(loss)
                if self.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
                done += 1
                # Lightning counts one optimizer step per rollout: the last update goes through it
                (optimizer.step() if done == total else optimizer.optimizer.step())
                last = loss.detach()
        return last


class BehaviorCloning(OnPolicy):
    """Behaviour cloning on a teacher's episodes: each step, the `teacher` policy (a models node:
    a heuristic, or any policy) collects a rollout, and the model is trained by cross-entropy to the
    teacher's actions on the visited observations. The logged episode metrics are the teacher's;
    the test phase measures the model.

    Args:
        model: The policy being trained.
        teacher: The policy that acts.
        optimizer: The model's optimizer.
        max_steps, test_greedy: As in reinforce.
    """

    def __init__(self, model: Model, teacher: Model, optimizer: Any = None, max_steps: PositiveInt | None = None,
                 test_greedy: bool = False) -> None:
        super().__init__(model, optimizer, max_steps, test_greedy, None)
        self.teacher = teacher

    def training_step(self, batch: Any, batch_idx: int) -> None:
        env = self.trainer.datamodule.env
        with torch.no_grad():
            episodes = collect(env, self.teacher, self._horizon(env))
        optimizer = self.optimizers()
        if self.learns():
            logp, _, _ = self.replay(episodes, torch.arange(len(episodes.alive)))
            loss = -_masked_mean(logp, episodes.alive.float())
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            self.log("train/loss", loss.detach(), on_step=True, prog_bar=True, batch_size=1)
        else:
            optimizer.step()
        self.rollouts += 1
        for key, value in episodes.metrics().items():
            self.log(f"train/{key}", value, on_step=True, batch_size=1)
