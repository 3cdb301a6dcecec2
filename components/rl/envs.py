"""Environments (`envs` kind): gymnasium vector environments of ours, vectorized in numpy, and
gymnasium's own through `gym_make`, with gymnasium's vector wrappers as nodes.

Every env here is a `gymnasium.vector.VectorEnv` whose autoreset mode is DISABLED: the on-policy
tasks collect a batch of `num_envs` whole episodes per training step (reset all, step until every
one has ended), so a finished sub-environment is frozen (same observation, reward 0, done again)
until the next `reset()`. Episodes end by termination (the task's outcome) or truncation after
`max_episode_steps` (the time limit, gymnasium's `truncated`). Action masks: a dict observation's
`action_mask` key, else `info["action_mask"]` (bool (num_envs, n)). Outcomes: `info["success"]`.

Random state: all draws come from `env.np_random` (gymnasium's seeded numpy Generator); the
rollouts data module seeds it once (`data.seed`) and stores its state in every checkpoint
(`env_state` / `load_env_state`, which also walk wrappers such as `normalize_observation`, whose
running statistics are state too), so a resumed run steps the same episodes.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from components.kinds import Kind
from framework.extras import require
from components.types import PositiveInt, Probability

gym = require("gymnasium", "the rl environments")
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402

Env = Annotated[Any, Kind("envs")]


class SlipperyGrid(VectorEnv):
    """`num_envs` copies of a size x size grid: start in a corner (0, 0), goal in the far corner
    (size-1, size-1), actions up/down/left/right (0-3); with probability `slip` the action taken
    is a uniformly random one instead. Reward 1 on reaching the goal (terminated, success), 0
    otherwise; truncated after `max_episode_steps`. Observation: the one-hot cell (size^2,), or
    `coords` (row, col) / (size - 1). With `mask_walls` the moves into the border are masked
    (info["action_mask"]); without, they leave the agent in place.

    Args:
        size: Cells per side.
        slip: Probability that a random action replaces the chosen one.
        max_episode_steps: The time limit (the horizon).
        num_envs: Episodes per rollout.
        observation: `onehot` (tabular policies) or `coords`.
        mask_walls: Mask the moves that would leave the grid.
    """

    MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right

    def __init__(self, size: PositiveInt = 10, slip: Probability = 0.2, max_episode_steps: PositiveInt = 40,
                 num_envs: PositiveInt = 16, observation: str = "onehot", mask_walls: bool = False) -> None:
        if observation not in ("onehot", "coords"):
            raise ValueError(f"observation must be onehot or coords, got {observation!r}")
        if size < 2:
            raise ValueError(f"size must be >= 2, got {size}")
        self.size, self.slip, self.max_episode_steps = size, slip, max_episode_steps
        self.num_envs, self.observation, self.mask_walls = num_envs, observation, mask_walls
        self.metadata = {"autoreset_mode": AutoresetMode.DISABLED}
        width = size * size if observation == "onehot" else 2
        self.single_observation_space = gym.spaces.Box(0.0, 1.0, (width,), np.float32)
        self.single_action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.spaces.MultiDiscrete(np.full(num_envs, 4))
        self.pos = np.zeros((num_envs, 2), dtype=np.int64)
        self.t = np.zeros(num_envs, dtype=np.int64)
        self.done = np.zeros(num_envs, dtype=bool)
        self.success = np.zeros(num_envs, dtype=bool)

    def _obs(self) -> np.ndarray:
        if self.observation == "coords":
            return (self.pos / (self.size - 1)).astype(np.float32)
        obs = np.zeros((self.num_envs, self.size * self.size), dtype=np.float32)
        obs[np.arange(self.num_envs), self.pos[:, 0] * self.size + self.pos[:, 1]] = 1.0
        return obs

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"success": self.success.copy()}
        if self.mask_walls:
            target = self.pos[:, None, :] + self.MOVES[None]
            info["action_mask"] = ((target >= 0) & (target < self.size)).all(-1)
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.pos[:] = 0
        self.t[:] = 0
        self.done[:] = False
        self.success[:] = False
        return self._obs(), self._info()

    def step(self, actions: Any):
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        live = ~self.done
        slipped = self.np_random.random(self.num_envs) < self.slip
        random_moves = self.np_random.integers(0, 4, self.num_envs)
        taken = np.where(slipped, random_moves, actions)
        target = self.pos + self.MOVES[taken]
        inside = ((target >= 0) & (target < self.size)).all(-1)
        self.pos = np.where((live & inside)[:, None], target, self.pos)
        self.t += live
        at_goal = (self.pos == self.size - 1).all(-1)
        terminated = live & at_goal
        truncated = live & ~at_goal & (self.t >= self.max_episode_steps)
        reward = terminated.astype(np.float64)
        self.success |= terminated
        self.done |= terminated | truncated
        return self._obs(), reward, terminated, truncated, self._info()


def gym_make(id: str, num_envs: PositiveInt = 8, max_episode_steps: PositiveInt | None = None,
             package: str | None = None, kwargs: dict[str, Any] | None = None) -> Any:
    """A registered gymnasium environment (`id`, e.g. CartPole-v1) as a synchronous vector env of
    `num_envs` copies with autoreset DISABLED; `max_episode_steps` is gymnasium's TimeLimit
    wrapper. `package`: the module that registers `id` (e.g. gymnasium_robotics, minigrid),
    imported first; missing, the run stops here, naming it."""
    if package:
        import importlib

        try:
            importlib.import_module(package)
        except ImportError as error:
            raise ImportError(f"gym_make: environment {id!r} needs the package `{package}`, which is not "
                              f"installed (pip install it locally; nothing is downloaded at run time)") from error
    env = gym.make_vec(id, num_envs=num_envs, vectorization_mode="sync",
                       vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
                       max_episode_steps=max_episode_steps, **(kwargs or {}))
    env.max_episode_steps = max_episode_steps or (env.spec.max_episode_steps if env.spec else None)
    return env


def normalize_observation(env: Env, epsilon: float = 1e-8) -> Any:
    """gymnasium's vector NormalizeObservation wrapper around `env`: observations scaled by a
    running mean and variance (updated while collecting; the statistics are checkpointed)."""
    from gymnasium.wrappers.vector import NormalizeObservation

    # gymnasium 1.4 refuses any autoreset mode but NEXT_STEP here, though its own warning for an env
    # without the key says disabled autoreset is fine too (the statistics only see observations);
    # the wrapper is built against NEXT_STEP and the env's DISABLED restored.
    mode = env.metadata.get("autoreset_mode")
    env.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
    try:
        wrapped = NormalizeObservation(env, epsilon=epsilon)
    finally:
        env.metadata = {**env.metadata, "autoreset_mode": mode}
    wrapped.max_episode_steps = getattr(env, "max_episode_steps", None)
    return wrapped


def env_layers(env: Any) -> list[Any]:
    """The env and every env it wraps, outermost first."""
    found = [env]
    while hasattr(found[-1], "env") and found[-1].env is not found[-1]:
        found.append(found[-1].env)
    for sub in getattr(found[-1], "envs", None) or []:  # a SyncVectorEnv's sub-environments
        found.extend(env_layers(sub))
    return found


def env_state(env: Any) -> list[dict[str, Any]]:
    """The random and running state of the env and every layer it wraps: np_random's bit-generator
    state, RunningMeanStd statistics (obs_rms), and an env's own `get_state()` where it has one."""
    states = []
    for layer in env_layers(env):
        state: dict[str, Any] = {}
        rng = getattr(layer, "_np_random", None)
        if rng is not None:
            state["np_random"] = rng.bit_generator.state
        rms = getattr(layer, "obs_rms", None)
        if rms is not None:
            state["obs_rms"] = {"mean": rms.mean.copy(), "var": rms.var.copy(), "count": rms.count}
        if callable(getattr(layer, "get_state", None)):
            state["own"] = layer.get_state()
        states.append(state)
    return states


def load_env_state(env: Any, states: list[dict[str, Any]]) -> None:
    """Restore what env_state saved (same wrapper stack)."""
    layers = env_layers(env)
    if len(layers) != len(states):
        raise ValueError(f"the checkpoint holds the state of {len(states)} env layers, this env has {len(layers)}")
    for layer, state in zip(layers, states):
        if "np_random" in state:
            rng = np.random.Generator(getattr(np.random, state["np_random"]["bit_generator"])())
            rng.bit_generator.state = state["np_random"]
            layer._np_random = rng
        if "obs_rms" in state:
            layer.obs_rms.mean, layer.obs_rms.var = state["obs_rms"]["mean"], state["obs_rms"]["var"]
            layer.obs_rms.count = state["obs_rms"]["count"]
        if "own" in state:
            layer.set_state(state["own"])
