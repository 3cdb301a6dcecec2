"""Differentiable plants (`envs` kind, the torch flavour): gymnasium environments whose reset and
step take and return torch tensors that carry gradients, so a controller is trained by
backpropagation through the plant (motornet's own `Environment` is one such gymnasium.Env).

The interface is motornet's (so its arm slots in at paper scale), batched over a leading axis:

    obs, info = env.reset(seed=None, options={"batch_size": B, "joint_state": (B, 2 or 4) tensor})
    obs, reward, terminated, truncated, info = env.step(action)      # action (B, action_dim)

`obs` is (B, observation_dim); `info["states"]["fingertip"]` (B, 2) is the hand's position (m)
and `info["states"]["joint"]` (B, 4) the joint angles and velocities; reward is None (the task
computes its loss from the states); terminated is False and truncated is True once
`max_episode_steps` steps are done (the task decides the horizon, and passes it as a time limit).
Attributes: `observation_space`, `action_space` (gymnasium Boxes of one sub-environment),
`observation_dim`, `action_dim`, `dt` (s), `home` (the default joint angles, (2,)) and
`output_activation` (the squashing a controller's output needs to land in the action space:
`tanh` for [-1, 1] torques, `sigmoid` for [0, 1] muscle drives).

- `two_link_arm`: a planar two-link arm driven by joint torques (written here: 40 lines of rigid-body
  dynamics, for the tiny tier), integrated with semi-implicit Euler;
- `motornet_arm26`: motornet's muscle-driven arm (RigidTendonArm26, six Hill-type muscles)
  through motornet's own Environment (the `motor` extra; paper scale).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from framework.extras import require
from components.types import PositiveFloat, PositiveInt

gym = require("gymnasium", "the motor plants")
from gymnasium import spaces  # noqa: E402


def _batch(options: dict[str, Any] | None) -> tuple[int, torch.Tensor | None]:
    options = options or {}
    joint = options.get("joint_state")
    if joint is not None:
        joint = torch.as_tensor(joint, dtype=torch.float32)
        return joint.shape[0], joint
    return int(options.get("batch_size", 1)), None


class TwoLinkArm(gym.Env):
    """A planar two-link arm (shoulder, elbow) driven by joint torques, in torch (differentiable).

    Dynamics: M(q) q'' + C(q, q') + B q' = tau, tau = max_torque * action (action in [-1, 1]);
    semi-implicit Euler with step `dt` (velocities first, then angles). Segment masses, lengths and
    inertias are those of motornet's TwoDofArm (a human upper arm and forearm). Observation: the
    hand position relative to the home posture's (m, x `obs_scale`), the joint angles relative to
    home and the joint velocities (x 0.1): 6 numbers, no delay, no noise.

    Args:
        dt: Integration step (s).
        max_torque: Torque (N m) at action 1.
        damping: Viscous joint damping (N m s / rad).
        home: Joint angles (rad) of the home posture (shoulder, elbow).
        max_episode_steps: Steps before truncated is True.
        obs_scale: Factor on the hand-position part of the observation.
    """

    metadata = {"render_modes": []}
    M1, M2, L1, L2, LC1, LC2, I1, I2 = 1.82, 1.43, 0.309, 0.333, 0.135, 0.165, 0.051, 0.057
    SIGN, CROSS = torch.tensor([-1.0, 1.0]), torch.tensor([-2.0, 0.0])

    def __init__(self, dt: PositiveFloat = 0.02, max_torque: PositiveFloat = 4.0, damping: float = 0.25,
                 home: tuple[float, float] = (0.8, 1.6), max_episode_steps: PositiveInt = 100,
                 obs_scale: PositiveFloat = 10.0) -> None:
        super().__init__()
        if damping < 0:
            raise ValueError(f"damping must be >= 0, got {damping}")
        self.dt, self.max_torque, self.damping = dt, max_torque, damping
        self.home = torch.tensor(home, dtype=torch.float32)
        self.max_episode_steps, self.obs_scale = max_episode_steps, obs_scale
        self.observation_dim, self.action_dim, self.output_activation = 6, 2, "tanh"
        self.observation_space = spaces.Box(-np.inf, np.inf, (6,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.a1 = self.I1 + self.I2 + self.M2 * self.L1 ** 2 + self.M1 * self.LC1 ** 2 + self.M2 * self.LC2 ** 2
        self.a2 = self.M2 * self.L1 * self.LC2
        self.a3 = self.I2 + self.M2 * self.LC2 ** 2
        self.home_hand = self.fingertip(self.home[None])[0]
        self.joint: torch.Tensor | None = None
        self.steps = 0

    def fingertip(self, q: torch.Tensor) -> torch.Tensor:
        """Hand position (B, 2) of joint angles q (B, 2)."""
        s = q[:, 0] + q[:, 1]
        return torch.stack([self.L1 * torch.cos(q[:, 0]) + self.L2 * torch.cos(s),
                            self.L1 * torch.sin(q[:, 0]) + self.L2 * torch.sin(s)], dim=1)

    def _obs(self) -> tuple[torch.Tensor, dict[str, Any]]:
        q, dq = self.joint[:, :2], self.joint[:, 2:]
        hand = self.fingertip(q)
        obs = torch.cat([(hand - self.home_hand) * self.obs_scale, q - self.home, 0.1 * dq], dim=1)
        return obs, {"states": {"joint": self.joint, "fingertip": hand}}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        batch, joint = _batch(options)
        if joint is None:
            joint = self.home.expand(batch, 2)
        if joint.shape[1] == 2:
            joint = torch.cat([joint, torch.zeros_like(joint)], dim=1)
        self.joint, self.steps = joint, 0
        return self._obs()

    def step(self, action: torch.Tensor):
        q, dq = self.joint[:, :2], self.joint[:, 2:]
        # few tensor ops per step (the Python overhead per op dominates at this size)
        c2, s2 = torch.cos(q[:, 1:]), torch.sin(q[:, 1:])            # (B, 1)
        m12 = self.a3 + self.a2 * c2
        m11 = (self.a1 - 2 * self.a3) + 2 * m12
        # h = a2 sin(q2) (-(2 dq1 dq2 + dq2^2), dq1^2): Coriolis and centripetal torques
        centripetal = (self.a2 * s2) * ((dq * dq).flip(1) * self.SIGN + (dq[:, :1] * dq[:, 1:]) * self.CROSS)
        r = self.max_torque * action - self.damping * dq - centripetal
        inv_det = 1.0 / (m11 * self.a3 - m12 * m12)
        ddq = torch.cat([self.a3 * r[:, :1] - m12 * r[:, 1:], m11 * r[:, 1:] - m12 * r[:, :1]], dim=1) * inv_det
        dq = dq + self.dt * ddq
        q = q + self.dt * dq
        self.joint, self.steps = torch.cat([q, dq], dim=1), self.steps + 1
        obs, info = self._obs()
        return obs, None, False, self.steps >= self.max_episode_steps, info


class MotornetArm26(gym.Env):
    """motornet's muscle-driven planar arm: `RigidTendonArm26` (two joints, six Hill-type muscles,
    `RigidTendonHillMuscle`) in motornet's differentiable `Environment`, with this family's
    interface (module docstring). Observation: the hand relative to home (x `obs_scale`), the joint
    angles relative to home, the joint velocities (x 0.1) and the muscles' normalized lengths and
    velocities (motornet's proprioception), no delay, no noise; actions are muscle drives in [0, 1].
    Needs the `motor` extra (motornet); paper scale.

    Args:
        dt: motornet's integration step (s).
        home: Joint angles (rad) of the home posture.
        max_episode_steps: Steps before truncated is True.
        obs_scale: Factor on the hand-position part of the observation.
    """

    metadata = {"render_modes": []}

    def __init__(self, dt: PositiveFloat = 0.01, home: tuple[float, float] = (0.8, 1.6),
                 max_episode_steps: PositiveInt = 100, obs_scale: PositiveFloat = 10.0) -> None:
        super().__init__()
        mn = require("motornet", "the motornet_arm26 plant")
        effector = mn.effector.RigidTendonArm26(muscle=mn.muscle.RigidTendonHillMuscle(), timestep=dt)
        self.env = mn.environment.Environment(effector=effector, max_ep_duration=max_episode_steps * dt,
                                              differentiable=True)
        self.dt, self.max_episode_steps, self.obs_scale = dt, max_episode_steps, obs_scale
        self.home = torch.tensor(home, dtype=torch.float32)
        self.muscles = int(effector.n_muscles)
        self.observation_dim, self.action_dim, self.output_activation = 4 + 2 * self.muscles + 2, self.muscles, "sigmoid"
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.observation_dim,), np.float32)
        self.action_space = spaces.Box(0.0, 1.0, (self.muscles,), np.float32)
        home_state = torch.cat([self.home, torch.zeros(2)])[None]
        self.env.reset(options={"batch_size": 1, "joint_state": home_state})
        self.home_hand = self.env.states["fingertip"][0].detach().clone()
        self.steps = 0

    def _obs(self) -> tuple[torch.Tensor, dict[str, Any]]:
        states = self.env.states
        joint, hand, muscle = states["joint"], states["fingertip"], states["muscle"]
        obs = torch.cat([(hand - self.home_hand) * self.obs_scale, joint[:, :2] - self.home, 0.1 * joint[:, 2:],
                         muscle[:, 1], muscle[:, 2]], dim=1)
        return obs, {"states": {"joint": joint, "fingertip": hand}}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        batch, joint = _batch(options)
        if joint is None:
            joint = self.home.expand(batch, 2)
        if joint.shape[1] == 2:
            joint = torch.cat([joint, torch.zeros_like(joint)], dim=1)
        self.env.reset(seed=seed, options={"batch_size": batch, "joint_state": joint})
        self.steps = 0
        return self._obs()

    def step(self, action: torch.Tensor):
        self.env.step(action, deterministic=True)
        self.steps += 1
        obs, info = self._obs()
        return obs, None, False, self.steps >= self.max_episode_steps, info


def angle_grid(count: int) -> torch.Tensor:
    """Unit vectors (count, 2) at angles 2 pi k / count."""
    angles = torch.arange(count, dtype=torch.float32) * (2 * math.pi / count)
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
