"""Goal-conditioned multi-agent environments (`envs` kind) for the off-policy tasks (macrl).

The goal-env contract (gymnasium-robotics' GoalEnv convention, on a vector env): the observation
is a dict with keys `observation`, `achieved_goal` and `desired_goal` (flattened by the tasks in
sorted key order: achieved_goal | desired_goal | observation), and the env has a vectorized
`compute_reward(achieved_goal (N, G), desired_goal (N, G), info) -> (N,)` (the sparse reward: 1
where the goal is met, else 0), with which a replay buffer relabels goals (hindsight). With
`terminate_on_success = True` an episode ends when its goal is met, so a relabelled transition
whose reward is positive is terminal too. Otherwise the `envs` contract of components/rl/envs.py
holds (autoreset DISABLED, a finished sub-environment frozen until reset, info['success'], all
randomness from `np_random`), except that actions are continuous: a Box of the joint action.

- `ma_goal_reach` (ours, numpy): point-mass agents in [-1, 1]^2 that must all be at their
  assigned goal positions at the same time (the goal is the joint configuration).
- `vmas_goal`: a vmas scenario (torch-vectorized multi-agent simulator; paper scale, `rl` extra)
  whose agents have goal landmarks (navigation-style scenarios), as a goal env of this contract.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from framework.extras import require
from components.types import PositiveFloat, PositiveInt

gym = require("gymnasium", "the rl environments")
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402



def all_at_goals(achieved_goal: Any, desired_goal: Any, agents: int, tolerance: float) -> np.ndarray:
    """The sparse reward (gymnasium-robotics' `compute_reward` signature): 1.0 where every agent's
    achieved 2D position is within `tolerance` of its goal, else 0.0; batched over leading dims."""
    a = np.asarray(achieved_goal, dtype=np.float64).reshape(-1, agents, 2)
    d = np.asarray(desired_goal, dtype=np.float64).reshape(-1, agents, 2)
    return (np.linalg.norm(a - d, axis=-1) <= tolerance).all(-1).astype(np.float64)

class MAGoalReach(VectorEnv):
    """`num_envs` copies of a cooperative multi-agent goal-reaching task: `agents` point masses in
    [-1, 1]^2, each with an assigned goal position; the goal is the joint configuration of all
    agents. Start and goal positions are uniform in the square. Each step every agent moves by
    `speed` x its action (a 2-d vector in [-1, 1]^2), clipped to the square. The episode succeeds
    (reward 1, terminated) when ALL agents are within `tolerance` of their goals at the same step;
    the reward is 0 otherwise (sparse); truncated after `max_episode_steps`.

    `tolerance` is the knob that makes the sparse reward uninformative: the smaller, the rarer any
    positive reward (for random exploration and for relabelled goals alike).

    Args:
        agents: Number of agents.
        tolerance: Distance (per agent, Euclidean) within which an agent is at its goal.
        speed: Largest move per step along each axis.
        max_episode_steps: The horizon.
        num_envs: Episodes per rollout.
    """

    terminate_on_success = True

    def __init__(self, agents: PositiveInt = 2, tolerance: PositiveFloat = 0.3, speed: PositiveFloat = 0.15,
                 max_episode_steps: PositiveInt = 30, num_envs: PositiveInt = 64) -> None:
        self.agents, self.tolerance, self.speed = agents, tolerance, speed
        self.max_episode_steps, self.num_envs = max_episode_steps, num_envs
        self.metadata = {"autoreset_mode": AutoresetMode.DISABLED}
        G = 2 * agents
        box = gym.spaces.Box(-1.0, 1.0, (G,), np.float32)
        self.single_observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (G,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.pos = np.zeros((num_envs, agents, 2))
        self.goal = np.zeros((num_envs, agents, 2))
        self.t = np.zeros(num_envs, dtype=np.int64)
        self.done = np.zeros(num_envs, dtype=bool)
        self.success = np.zeros(num_envs, dtype=bool)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> np.ndarray:
        return all_at_goals(achieved_goal, desired_goal, self.agents, self.tolerance)

    def _obs(self) -> dict[str, np.ndarray]:
        pos = self.pos.reshape(self.num_envs, -1).astype(np.float32)
        return {"observation": pos, "achieved_goal": pos.copy(),
                "desired_goal": self.goal.reshape(self.num_envs, -1).astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-1.0, 1.0, (self.num_envs, self.agents, 2))
        self.goal = self.np_random.uniform(-1.0, 1.0, (self.num_envs, self.agents, 2))
        self.t[:] = 0
        self.done[:] = False
        self.success[:] = False
        return self._obs(), {"success": self.success.copy()}

    def step(self, actions: Any):
        a = np.clip(np.asarray(actions, dtype=np.float64).reshape(self.num_envs, self.agents, 2), -1.0, 1.0)
        live = ~self.done
        self.pos = np.where(live[:, None, None], np.clip(self.pos + self.speed * a, -1.0, 1.0), self.pos)
        self.t += live
        reached = self.compute_reward(self.pos, self.goal) > 0
        terminated = live & reached
        truncated = live & ~reached & (self.t >= self.max_episode_steps)
        self.success |= terminated
        self.done |= terminated | truncated
        return self._obs(), terminated.astype(np.float64), terminated, truncated, {"success": self.success.copy()}


class VmasGoal(VectorEnv):
    """A vmas scenario (Bettini et al., torch-vectorized 2-d multi-agent physics) as a goal env:
    `num_envs` vmas worlds on the CPU; the achieved goal is every agent's position, the desired
    goal every agent's goal landmark (`agent.goal`, as in vmas' `navigation` and similar
    scenarios), the observation every agent's position and velocity. Sparse: success when all
    agents are within `tolerance` of their goals (terminated). Continuous actions (vmas'
    `continuous_actions=True`), the joint action of all agents.

    Paper scale (`tier: full`): needs the `vmas` package (the `rl` extra); without it the spec stops
    when the env is built, naming it. The scenario's own random draws come from torch's generator
    (vmas seeds it from `reset(seed=...)`); np_random is only gymnasium's.

    Args:
        scenario: A vmas scenario name with goal landmarks (e.g. navigation).
        agents: n_agents passed to the scenario.
        tolerance: Per-agent distance to its goal that counts as reached.
        max_episode_steps: The horizon.
        num_envs: Parallel vmas worlds (episodes per rollout).
        kwargs: Further scenario arguments.
    """

    terminate_on_success = True

    def __init__(self, scenario: str = "navigation", agents: PositiveInt = 4, tolerance: PositiveFloat = 0.1,
                 max_episode_steps: PositiveInt = 100, num_envs: PositiveInt = 64,
                 kwargs: dict[str, Any] | None = None) -> None:
        vmas = require("vmas", "vmas_goal")
        self.vmas_env = vmas.make_env(scenario, num_envs=num_envs, device="cpu", continuous_actions=True,
                                      n_agents=agents, max_steps=None, **(kwargs or {}))
        self.agents, self.tolerance, self.max_episode_steps, self.num_envs = agents, tolerance, max_episode_steps, num_envs
        world_agents = self.vmas_env.world.agents
        if not all(getattr(a, "goal", None) is not None for a in world_agents):
            raise ValueError(f"vmas_goal: scenario {scenario!r} has no goal landmark per agent (agent.goal)")
        self.metadata = {"autoreset_mode": AutoresetMode.DISABLED}
        G = 2 * agents
        goal = gym.spaces.Box(-np.inf, np.inf, (G,), np.float32)
        self.single_observation_space = gym.spaces.Dict({
            "observation": gym.spaces.Box(-np.inf, np.inf, (2 * G,), np.float32), "achieved_goal": goal, "desired_goal": goal})
        self.u_dim = [int(np.prod(s.shape)) for s in self.vmas_env.action_space.spaces]
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (sum(self.u_dim),), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.t = np.zeros(num_envs, dtype=np.int64)
        self.done = np.zeros(num_envs, dtype=bool)
        self.success = np.zeros(num_envs, dtype=bool)

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any = None) -> np.ndarray:
        return all_at_goals(achieved_goal, desired_goal, self.agents, self.tolerance)

    def _state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        agents = self.vmas_env.world.agents
        pos = np.stack([a.state.pos.numpy() for a in agents], 1)
        vel = np.stack([a.state.vel.numpy() for a in agents], 1)
        goal = np.stack([a.goal.state.pos.numpy() for a in agents], 1)
        return pos, vel, goal

    def _obs(self) -> dict[str, np.ndarray]:
        pos, vel, goal = self._state()
        n = self.num_envs
        return {"observation": np.concatenate([pos.reshape(n, -1), vel.reshape(n, -1)], 1).astype(np.float32),
                "achieved_goal": pos.reshape(n, -1).astype(np.float32), "desired_goal": goal.reshape(n, -1).astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.vmas_env.seed(seed)
        self.vmas_env.reset()
        self.t[:] = 0
        self.done[:] = False
        self.success[:] = False
        return self._obs(), {"success": self.success.copy()}

    def step(self, actions: Any):
        import torch

        a = torch.as_tensor(np.clip(np.asarray(actions, dtype=np.float32), -1, 1)).reshape(self.num_envs, -1)
        live = ~self.done
        a = a * torch.as_tensor(live, dtype=torch.float32)[:, None]
        u, start = [], 0
        for dim, agent in zip(self.u_dim, self.vmas_env.world.agents):
            u.append(a[:, start:start + dim] * float(getattr(agent, "u_range", 1.0)))
            start += dim
        self.vmas_env.step(u)
        self.t += live
        obs = self._obs()
        reached = self.compute_reward(obs["achieved_goal"], obs["desired_goal"]) > 0
        terminated = live & reached
        truncated = live & ~reached & (self.t >= self.max_episode_steps)
        self.success |= terminated
        self.done |= terminated | truncated
        return obs, terminated.astype(np.float64), terminated, truncated, {"success": self.success.copy()}
