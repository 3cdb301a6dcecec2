"""Networks (`models` kind) for the off-policy goal-conditioned tasks (components/rl/offpolicy.py).

- `shared_gaussian_actor`: parameter-shared decentralized actors. One network acts for every
  agent: its input is the flat observation (goal included) and the agent's one-hot ID, its output
  that agent's action, a tanh-squashed Gaussian (SAC's); the joint action is the agents' actions
  concatenated. It keeps the policy contract of policies.py (forward(obs, state) -> (distribution
  with batch shape (B,), None, None)), so the rollouts collect with it like with any policy.
- `twin_q`: SAC's two centralized Q(s, a_1..a_n) networks (s includes the goal).
- `contrastive_critic`: the centralized contrastive critic of CRL (Eysenbach et al. 2022;
  JaxGCRL): phi(joint state, joint action) and psi(goal) embeddings, f = -||phi - psi||_2
  (`energy: l2`) or phi . psi (`energy: dot`).
- `uniform_random`: the random policy (uniform actions in the Box), the floor of the claims.

Every MLP is `mlp(...)`: plain (Linear + activation) or, with `residual: true`, the residual blocks
of the depth-scaling work (Wang et al. 2025, "1000-layer networks"): Linear, then blocks of
(Linear, LayerNorm, Swish) x 4 with a skip connection around each block; `depth` counts the
Linear layers inside blocks, so depth is a sweep axis (4 ... 64).

Hand-written, small: TorchRL's actors/critics are TensorDict modules (ProbabilisticActor,
ValueOperator) whose losses (SACLoss) expect TensorDict inputs; the tasks here keep the plain
tensor policy contract shared with the on-policy tasks.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from components.types import PositiveInt

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class ResidualBlock(nn.Module):
    def __init__(self, width: int, layers: int = 4) -> None:
        super().__init__()
        body: list[nn.Module] = []
        for _ in range(layers):
            body += [nn.Linear(width, width), nn.LayerNorm(width), nn.SiLU()]
        self.body = nn.Sequential(*body)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


def mlp(inputs: int, outputs: int, hidden: int, depth: int, residual: bool) -> nn.Sequential:
    """Plain: `depth` hidden Linear+ReLU layers of width `hidden`. Residual: an input Linear, then
    depth // 4 residual blocks of 4 x (Linear, LayerNorm, Swish) (depth a multiple of 4)."""
    if residual:
        if depth % 4:
            raise ValueError(f"residual networks take depth as a multiple of 4 (blocks of 4 layers), got {depth}")
        layers: list[nn.Module] = [nn.Linear(inputs, hidden), nn.LayerNorm(hidden), nn.SiLU()]
        layers += [ResidualBlock(hidden) for _ in range(depth // 4)]
        return nn.Sequential(*layers, nn.Linear(hidden, outputs))
    layers = []
    width = inputs
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, outputs))


class TanhNormal(torch.distributions.TransformedDistribution):
    """A diagonal Normal squashed by tanh (SAC's actions), over the last dimension (event dim 1);
    `mean` is tanh(mu) (the greedy action). log_prob of its own samples uses the cached pre-tanh
    value (cache_size=1), so it is exact."""

    def __init__(self, loc: torch.Tensor, scale: torch.Tensor) -> None:
        base = torch.distributions.Independent(torch.distributions.Normal(loc, scale, validate_args=False), 1)
        super().__init__(base, [torch.distributions.TanhTransform(cache_size=1)], validate_args=False)
        self.loc = loc

    @property
    def mean(self) -> torch.Tensor:
        return torch.tanh(self.loc)


class SharedGaussianActor(nn.Module):
    """Parameter-shared decentralized actors (module docstring).

    Args:
        in_features: Flat observation width (goal included; checked against the data's).
        num_actions: Joint action dimensions (agents x per-agent dims; checked against the env's).
        agents: Number of agents sharing the network (num_actions must be a multiple).
        hidden: Width of the hidden layers.
        depth: Hidden layers (residual: a multiple of 4).
        residual: Residual blocks with LayerNorm and Swish (the depth-scaling network).
    """

    def __init__(self, in_features: PositiveInt, num_actions: PositiveInt, agents: PositiveInt = 2,
                 hidden: PositiveInt = 64, depth: PositiveInt = 2, residual: bool = False) -> None:
        super().__init__()
        if num_actions % agents:
            raise ValueError(f"num_actions ({num_actions}) must be a multiple of agents ({agents})")
        self.agents, self.per_agent = agents, num_actions // agents
        self.net = mlp(in_features + agents, 2 * self.per_agent, hidden, depth, residual)
        self.register_buffer("ids", torch.eye(agents))

    def initial_state(self, batch_size: int) -> None:
        return None

    def distribution(self, obs: torch.Tensor) -> TanhNormal:
        B, n = obs.shape[0], self.agents
        x = torch.cat([obs[:, None, :].expand(B, n, obs.shape[-1]), self.ids.expand(B, n, n)], -1)
        mu, log_std = self.net(x).chunk(2, -1)  # (B, n, per_agent) each
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(log_std) + 1)
        return TanhNormal(mu.reshape(B, -1), log_std.exp().reshape(B, -1))

    def forward(self, obs: torch.Tensor, state: None = None):
        return self.distribution(obs), None, None


class TwinQ(nn.Module):
    """SAC's twin centralized critics Q_1, Q_2 (state with goal, joint action) -> (B,) each.

    Args:
        in_features: Flat observation width (goal included).
        num_actions: Joint action dimensions.
        hidden, depth, residual: As in shared_gaussian_actor.
    """

    def __init__(self, in_features: PositiveInt, num_actions: PositiveInt, hidden: PositiveInt = 64,
                 depth: PositiveInt = 2, residual: bool = False) -> None:
        super().__init__()
        self.q1 = mlp(in_features + num_actions, 1, hidden, depth, residual)
        self.q2 = mlp(in_features + num_actions, 1, hidden, depth, residual)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, action], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


class ContrastiveCritic(nn.Module):
    """The centralized contrastive critic: phi(joint state, joint action), psi(goal), f = -||phi - psi||
    (`l2`) or phi . psi (`dot`); `logits(state, action, goal)` is the (B, B) matrix f(s_i, a_i, g_j).

    Args:
        state_features: Width of the joint state (the flat observation without the desired goal).
        num_actions: Joint action dimensions.
        goal_features: Width of a goal.
        repr_dim: Embedding width.
        hidden, depth, residual: As in shared_gaussian_actor (both encoders).
        energy: l2 or dot.
    """

    def __init__(self, state_features: PositiveInt, num_actions: PositiveInt, goal_features: PositiveInt,
                 repr_dim: PositiveInt = 32, hidden: PositiveInt = 64, depth: PositiveInt = 2,
                 residual: bool = False, energy: str = "l2") -> None:
        super().__init__()
        if energy not in ("l2", "dot"):
            raise ValueError(f"energy must be l2 or dot, got {energy!r}")
        self.energy = energy
        self.state_features, self.goal_features = state_features, goal_features
        self.phi = mlp(state_features + num_actions, repr_dim, hidden, depth, residual)
        self.psi = mlp(goal_features, repr_dim, hidden, depth, residual)

    def embed(self, state: torch.Tensor, action: torch.Tensor, goal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.phi(torch.cat([state, action], -1)), self.psi(goal)

    def logits(self, state: torch.Tensor, action: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        phi, psi = self.embed(state, action, goal)
        if self.energy == "l2":  # ||phi_i - psi_j||^2 = |phi_i|^2 + |psi_j|^2 - 2 phi_i . psi_j
            square = (phi * phi).sum(-1)[:, None] + (psi * psi).sum(-1)[None, :] - 2 * phi @ psi.T
            return -torch.sqrt(square.clamp_min(0) + 1e-8)
        return phi @ psi.T / math.sqrt(phi.shape[-1])

    def forward(self, state: torch.Tensor, action: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """f(s_i, a_i, g_i), (B,)."""
        phi, psi = self.embed(state, action, goal)
        if self.energy == "l2":
            return -torch.sqrt(((phi - psi) ** 2).sum(-1) + 1e-8)
        return (phi * psi).sum(-1) / math.sqrt(phi.shape[-1])


class UniformRandom(nn.Module):
    """The random policy: actions uniform in [-1, 1]^num_actions (no parameters); the floor.

    Args:
        num_actions: Joint action dimensions.
    """

    def __init__(self, num_actions: PositiveInt) -> None:
        super().__init__()
        self.num_actions = num_actions

    def initial_state(self, batch_size: int) -> None:
        return None

    def forward(self, obs: torch.Tensor, state: None = None):
        low = -torch.ones(obs.shape[0], self.num_actions)
        uniform = torch.distributions.Uniform(low, -low, validate_args=False)
        return torch.distributions.Independent(uniform, 1), None, None
