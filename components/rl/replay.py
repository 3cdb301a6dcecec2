"""Replay buffers (`replay_buffers` kind) for the off-policy tasks (components/rl/offpolicy.py).

`episode_replay` keeps whole episodes (a circular buffer of `capacity` episodes, padded to the
horizon) in TorchRL's ReplayBuffer (LazyTensorStorage of a TensorDict per episode, RandomSampler:
episodes uniformly, with replacement), and samples transitions from them: an episode, then a step
t uniformly among its real steps, with the observation before and after it and a FUTURE state of
the same episode (t' uniform in t+1 .. the episode's end). Whole episodes are stored because both
uses of the future need the trajectory: hindsight relabelling (HER, Andrychowicz et al. 2017,
strategy "future": with probability `relabel_ratio` the transition's desired goal is replaced by
the goal achieved at t', and its reward recomputed by the env's `compute_reward`) and the
contrastive critic's positives (the achieved goal at t' of the same trajectory, always drawn,
whatever `relabel`). Sampling is uniform over episodes, then over steps, so steps of short
(successful) episodes are drawn more often than with a flat transition buffer.

TorchRL's own HER transform (HERTransform) and SliceSampler want TorchRL env rollouts (nested
"next" TensorDicts with trajectory ids); the tasks collect from a plain gymnasium vector env, so
the step/future draw (ten lines) is written here on top of TorchRL's storage and sampler.

Resume: `state_dict()` is plain tensors (the stored episodes and the write cursor), saved by the
task in every checkpoint; draws use torch's global generator (restored by the resume
checkpoint), so a resumed run samples the same batches.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from components.types import PositiveInt, Probability


def _torchrl_data() -> Any:
    from framework.extras import require

    return require("torchrl.data", "the off-policy replay buffer")


class GoalLayout:
    """Where the achieved and desired goals sit in the flat observation of a goal env (a dict
    space with achieved_goal / desired_goal / observation keys, flattened in sorted key order),
    and the env's reward function for relabelled goals."""

    def __init__(self, space: Any, env: Any) -> None:
        from components.rl.envs import env_layers

        spaces = getattr(space, "spaces", None)
        if not isinstance(spaces, dict) or not {"achieved_goal", "desired_goal"} <= set(spaces):
            raise ValueError("goal relabelling and the contrastive critic need a goal env: a dict observation "
                             "with achieved_goal and desired_goal keys (components/rl/goal_envs.py)")
        start, self.slices = 0, {}
        for key in sorted(spaces):
            if key == "action_mask":
                continue
            width = int(torch.tensor(spaces[key].shape).prod())
            self.slices[key] = slice(start, start + width)
            start += width
        self.width = start
        goal = self.slices["desired_goal"]
        self.state_index = torch.tensor([i for i in range(start) if not goal.start <= i < goal.stop])
        self.goal_width = self.slices["desired_goal"].stop - self.slices["desired_goal"].start
        self.compute = next((layer.compute_reward for layer in env_layers(env) if hasattr(layer, "compute_reward")), None)
        if self.compute is None:
            raise ValueError("the goal env has no compute_reward(achieved_goal, desired_goal, info)")
        self.terminal = any(getattr(layer, "terminate_on_success", False) for layer in env_layers(env))

    def achieved(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[..., self.slices["achieved_goal"]]

    def desired(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[..., self.slices["desired_goal"]]

    def with_goal(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        out = obs.clone()
        out[..., self.slices["desired_goal"]] = goal
        return out

    def state(self, obs: torch.Tensor) -> torch.Tensor:
        """The joint state: the flat observation without the desired goal."""
        return obs.index_select(-1, self.state_index)

    def reward(self, achieved: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.compute(achieved.numpy(), goal.numpy(), None), dtype=torch.float32)


class EpisodeReplay:
    """Whole episodes in a TorchRL replay buffer, transitions drawn with a future state (module
    docstring).

    Args:
        capacity: Episodes kept (the oldest are overwritten).
        relabel: `future` (HER's future strategy) or `none`.
        relabel_ratio: Fraction of sampled transitions whose goal is relabelled (relabel: future).
        warmup: Episodes stored before the first gradient update.
    """

    def __init__(self, capacity: PositiveInt = 1024, relabel: Literal["none", "future"] = "none",
                 relabel_ratio: Probability = 0.8, warmup: PositiveInt = 1) -> None:
        if relabel not in ("none", "future"):
            raise ValueError(f"relabel must be none or future, got {relabel!r}")
        self.capacity, self.relabel, self.relabel_ratio, self.warmup = capacity, relabel, relabel_ratio, warmup
        self.layout: GoalLayout | None = None
        self._new()

    def _new(self) -> None:
        data = _torchrl_data()
        self.buffer = data.ReplayBuffer(storage=data.LazyTensorStorage(self.capacity), sampler=data.RandomSampler())

    def __len__(self) -> int:
        return len(self.buffer)

    def ready(self) -> bool:
        return len(self.buffer) >= self.warmup

    def configure(self, layout: GoalLayout | None) -> None:
        if self.relabel == "future" and layout is None:
            raise ValueError("replay.relabel: future needs a goal env (dict observation with achieved/desired goals)")
        self.layout = layout

    def add(self, episodes: Any, horizon: int) -> None:
        """Store a rollout's episodes (components/rl/rollout.py Episodes), padded to `horizon` steps."""
        from tensordict import TensorDict

        B, T = episodes.alive.shape
        pad = horizon - T
        obs, actions = episodes.obs, episodes.actions.float()
        if actions.dim() == 2:
            actions = actions[..., None]
        if pad > 0:
            obs = torch.cat([obs, obs[:, -1:].expand(B, pad, obs.shape[-1])], 1)
            actions = torch.cat([actions, actions.new_zeros(B, pad, actions.shape[-1])], 1)
        grow = (lambda x: torch.cat([x, x.new_zeros(B, pad)], 1)) if pad > 0 else (lambda x: x)
        self.buffer.extend(TensorDict({
            "obs": obs.float(), "actions": actions, "rewards": grow(episodes.rewards.float()),
            "alive": grow(episodes.alive), "terminated": episodes.terminated, "last": episodes.last,
        }, batch_size=[B]))

    def sample(self, n: int) -> dict[str, torch.Tensor]:
        """n transitions: obs, action, next_obs, reward, terminal (the env's), and future_obs (the
        observation at a future step t' of the same episode); with relabel: future, obs / next_obs /
        reward / terminal relabelled for a `relabel_ratio` fraction (the desired goal replaced by the
        achieved goal of future_obs)."""
        eps = self.buffer.sample(n)
        all_obs, last = eps["obs"], eps["last"]  # each field read once (TensorDict lookups are not free)
        rows = torch.arange(n)
        length = last + 1
        t = (torch.rand(n) * length).long().clamp_max(length - 1)
        future = t + 1 + (torch.rand(n) * (length - t)).long().clamp_max(length - t - 1)
        obs, next_obs = all_obs[rows, t], all_obs[rows, t + 1]
        out = {"obs": obs, "action": eps["actions"][rows, t], "next_obs": next_obs,
               "reward": eps["rewards"][rows, t], "terminal": (t == last) & eps["terminated"],
               "future_obs": all_obs[rows, future]}
        if self.layout is not None:
            lay = self.layout
            goal = lay.desired(obs)
            if self.relabel == "future":
                swap = torch.rand(n) < self.relabel_ratio
                goal = torch.where(swap[:, None], lay.achieved(out["future_obs"]), goal)
            out["obs"], out["next_obs"] = lay.with_goal(obs, goal), lay.with_goal(next_obs, goal)
            out["reward"] = lay.reward(lay.achieved(next_obs), goal)
            out["terminal"] = (out["reward"] > 0) if lay.terminal else torch.zeros(n, dtype=torch.bool)
        return out

    def state_dict(self) -> dict[str, Any]:
        size = len(self.buffer)
        stored = self.buffer.storage._storage
        data = {k: stored[k][:size].clone() for k in stored.keys()} if size else {}
        return {"data": data, "size": size, "cursor": int(self.buffer._writer._cursor)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from tensordict import TensorDict

        self._new()
        if state["size"]:
            self.buffer.extend(TensorDict(state["data"], batch_size=[state["size"]]))
        self.buffer._writer._cursor = state["cursor"]
