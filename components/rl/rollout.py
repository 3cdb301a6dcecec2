"""Collecting a batch of whole episodes from a vector env with a policy (no gradients).

Hand-written rather than TorchRL's collectors (SyncDataCollector): those step a TorchRL env
(TensorDict in and out) in frames of fixed length with autoreset, whereas a task here needs
exactly num_envs whole episodes per training step, aligned at t = 0 in a (B, T) batch (so a
recurrent policy is re-run over whole episodes, returns are per episode, and the episode metrics
are per rollout), from a plain gymnasium vector env. The loop is twenty lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass
class Episodes:
    """B episodes padded to T steps (batch-major). Step t of episode b is real when alive[b, t]."""

    obs: torch.Tensor          # (B, T + 1, D): observation before step t; obs[:, T] the last one
    actions: torch.Tensor      # (B, T) long, or (B, T, A) float for continuous actions
    rewards: torch.Tensor      # (B, T) the environment's reward (0 on padding)
    alive: torch.Tensor        # (B, T) bool
    log_probs: torch.Tensor    # (B, T) of the behaviour policy
    values: torch.Tensor | None  # (B, T + 1) the critic's, or None
    masks: torch.Tensor | None   # (B, T, A) bool action masks, or None
    terminated: torch.Tensor   # (B,) bool: ended by the task (no bootstrap)
    success: torch.Tensor      # (B,) bool
    last: torch.Tensor         # (B,) index of each episode's last step
    extra: dict[str, torch.Tensor] | None = None  # the env's own per-episode metrics, (B,) each

    @property
    def lengths(self) -> torch.Tensor:
        return self.alive.sum(1)

    @property
    def states_after(self) -> torch.Tensor:
        """(B, T, D): the observation after each step."""
        return self.obs[:, 1:]

    def done(self) -> torch.Tensor:
        """(B, T) bool: True at each episode's last step."""
        done = torch.zeros_like(self.alive)
        done[torch.arange(len(done)), self.last] = True
        return done

    def metrics(self) -> dict[str, float]:
        returns = (self.rewards * self.alive).sum(1)
        out = {"episode_return": returns.mean().item(), "success_rate": self.success.float().mean().item(),
               "episode_length": self.lengths.float().mean().item()}
        out.update({k: v.float().mean().item() for k, v in (self.extra or {}).items()})
        return out


def split_observation(obs: Any, info: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(flat float observation (B, D), bool action mask (B, A) or None): a dict observation's
    `action_mask` key, else info['action_mask']; the other keys flattened and concatenated in
    sorted key order."""
    if isinstance(obs, dict):
        mask = obs.get("action_mask")
        parts = [np.asarray(obs[k], dtype=np.float32).reshape(len(obs[k]), -1) for k in sorted(obs) if k != "action_mask"]
        flat = np.concatenate(parts, axis=1)
    else:
        mask = info.get("action_mask") if isinstance(info, dict) else None
        flat = np.asarray(obs, dtype=np.float32).reshape(len(obs), -1)
    return torch.as_tensor(flat), (torch.as_tensor(np.asarray(mask, dtype=bool)) if mask is not None else None)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return logits if mask is None else logits.masked_fill(~mask, float("-inf"))


def action_distribution(out: Any, mask: torch.Tensor | None) -> torch.distributions.Distribution:
    """The policy's action distribution: its logits (B, A) -> a Categorical over the unmasked
    actions; a torch Distribution it returned itself (continuous actions, e.g. a Gaussian) as is."""
    if isinstance(out, torch.distributions.Distribution):
        if mask is not None:
            raise ValueError("action masks apply to discrete actions (logits), not to a continuous distribution")
        return out
    return torch.distributions.Categorical(logits=masked_logits(out, mask), validate_args=False)


def greedy_action(dist: torch.distributions.Distribution) -> torch.Tensor:
    """The most likely discrete action, or a continuous distribution's mean."""
    if isinstance(dist, torch.distributions.Categorical):
        return dist.logits.argmax(-1)
    return dist.mean


def episode_metrics(env: Any) -> dict[str, torch.Tensor] | None:
    """The env's own per-episode metrics: `env.episode_metrics()` -> {name: (num_envs,) array}
    for the episodes since the last reset, of the outermost layer (env or wrapped env) that has it;
    logged as train/<name>, test/<name> (means over episodes) next to the episode return."""
    from components.rl.envs import env_layers

    for layer in env_layers(env):
        if callable(getattr(layer, "episode_metrics", None)):
            return {k: torch.as_tensor(np.asarray(v, dtype=np.float64)) for k, v in layer.episode_metrics().items()}
    return None


def collect(env: Any, policy: Any, max_steps: int, greedy: bool = False) -> Episodes:
    """Reset env (continuing its random state) and run `policy` until every episode has ended or
    `max_steps` steps (then the rest count as truncated). Actions are drawn from torch's global
    generator (restored on resume by the resume checkpoint)."""
    obs, info = env.reset()
    x, mask = split_observation(obs, info)
    B = x.shape[0]
    state = policy.initial_state(B) if hasattr(policy, "initial_state") else None
    alive = torch.ones(B, dtype=torch.bool)
    rec: dict[str, list[torch.Tensor]] = {k: [] for k in ("obs", "actions", "rewards", "alive", "logp", "values", "masks")}
    terminated = torch.zeros(B, dtype=torch.bool)
    success = torch.zeros(B, dtype=torch.bool)
    value = None
    with torch.no_grad():
        for _ in range(max_steps):
            out, value, state = policy(x, state)
            dist = action_distribution(out, mask)
            action = greedy_action(dist) if greedy else dist.sample()
            rec["obs"].append(x); rec["actions"].append(action); rec["alive"].append(alive.clone())
            rec["logp"].append(dist.log_prob(action)); rec["masks"].append(mask)
            rec["values"].append(value)
            obs, reward, term, trunc, info = env.step(action.numpy())
            reward = torch.as_tensor(np.asarray(reward, dtype=np.float32))
            rec["rewards"].append(torch.where(alive, reward, 0.0))
            term, trunc = torch.as_tensor(np.asarray(term, dtype=bool)), torch.as_tensor(np.asarray(trunc, dtype=bool))
            ok = None
            if isinstance(info, dict):  # ours: success; gymnasium-robotics: is_success
                ok = info.get("success", info.get("is_success"))
            won = torch.as_tensor(np.asarray(ok, dtype=bool)) if ok is not None else term & (reward > 0)
            success |= alive & won
            terminated |= alive & term
            alive = alive & ~(term | trunc)
            x, mask = split_observation(obs, info)
            if not alive.any():
                break
        _, value, _ = policy(x, state)  # the critic at each episode's final observation (bootstrap)
    rec["obs"].append(x)
    rec["values"].append(value)
    alive_bt = torch.stack(rec["alive"], 1)
    last = alive_bt.sum(1) - 1
    # frozen finished envs repeat their last observation: obs[:, t + 1] after the last step is the final one
    obs_bt = torch.stack(rec["obs"], 1)
    values = torch.stack(rec["values"], 1) if rec["values"][0] is not None else None
    masks = torch.stack(rec["masks"], 1) if rec["masks"][0] is not None else None
    return Episodes(extra=episode_metrics(env), obs=obs_bt, actions=torch.stack(rec["actions"], 1), rewards=torch.stack(rec["rewards"], 1),
                    alive=alive_bt, log_probs=torch.stack(rec["logp"], 1), values=values, masks=masks,
                    terminated=terminated, success=success, last=last)
