"""Policies (`models` kind) for the on-policy tasks.

The contract every policy keeps (tasks.py calls nothing else):

    policy(obs, state) -> (logits (B, A), value (B,) or None, state)
    (continuous actions: a torch Distribution with batch shape (B,) in place of the logits)
    policy.initial_state(batch_size) -> a tensor (recurrent) or None

`obs` is the flat float observation (B, D) (an `action_mask` key of a dict observation is taken
out by the task and applied to the logits as -inf, so a policy never sees or handles masks);
`state` is what the policy returned at the previous step of the same episodes (None at the first
step for a feed-forward policy). `value` is the critic's estimate (PPO and `baseline: value` need
it). A fixed heuristic is a policy without parameters (e.g. GridGoalSeeking): the same tasks
evaluate it with `optimizer: null` (no updates), and a sweep over its arguments is an `exp sweep`.
"""

from __future__ import annotations

from typing import Literal



import torch
from torch import nn

from components.types import NonNegativeInt, PositiveInt, Probability


class ActorCritic(nn.Module):
    """MLP torso (or none), optionally a GRU cell, a linear policy head (logits over num_actions)
    and a linear value head.

    Args:
        in_features: Observation width (checked against the data's).
        num_actions: Discrete actions (checked against the env's).
        hidden: Torso widths; [] with one-hot observations is a tabular softmax policy.
        recurrent: Width of a GRU cell after the torso (0: feed-forward). The hidden state is
            carried through an episode; a recurrent policy is re-run over whole episodes in PPO.
        zero_init: Zero the policy head, so the untrained policy is uniform (gaussian: mean 0).
        actions: `discrete` (logits over num_actions) or `gaussian` (continuous actions of
            num_actions dimensions: a diagonal Normal, mean from the head, a learned log std).
        init_log_std: The gaussian's initial log standard deviation.
    """

    def __init__(self, in_features: PositiveInt, num_actions: PositiveInt, hidden: tuple[PositiveInt, ...] = (64,),
                 recurrent: NonNegativeInt = 0, zero_init: bool = False,
                 actions: Literal["discrete", "gaussian"] = "discrete", init_log_std: float = -0.5) -> None:
        super().__init__()
        if actions not in ("discrete", "gaussian"):
            raise ValueError(f"actions must be discrete or gaussian, got {actions!r}")
        self.gaussian = actions == "gaussian"
        if self.gaussian:
            self.log_std = nn.Parameter(torch.full((num_actions,), float(init_log_std)))
        layers: list[nn.Module] = []
        width = in_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        self.torso = nn.Sequential(*layers)
        self.gru = nn.GRUCell(width, recurrent) if recurrent else None
        width = recurrent or width
        self.policy_head = nn.Linear(width, num_actions)
        self.value_head = nn.Linear(width, 1)
        self.recurrent = recurrent
        if zero_init:
            nn.init.zeros_(self.policy_head.weight)
            nn.init.zeros_(self.policy_head.bias)

    def initial_state(self, batch_size: int) -> torch.Tensor | None:
        return torch.zeros(batch_size, self.recurrent) if self.recurrent else None

    def forward(self, obs: torch.Tensor, state: torch.Tensor | None = None):
        x = self.torso(obs)
        if self.gru is not None:
            x = state = self.gru(x, state)
        head = self.policy_head(x)
        if self.gaussian:
            normal = torch.distributions.Normal(head, self.log_std.exp().expand_as(head), validate_args=False)
            head = torch.distributions.Independent(normal, 1)
        return head, self.value_head(x).squeeze(-1), state


class GridGoalSeeking(nn.Module):
    """A fixed heuristic for slippery_grid (one-hot or coords observations): move down or right (toward the
    goal corner), uniformly, never off the grid; with probability `epsilon` a uniformly random
    action instead. No parameters; a teacher for behavior_cloning and a baseline.

    Args:
        size: The grid's cells per side.
        epsilon: Probability of a uniformly random action.
    """

    def __init__(self, size: PositiveInt = 10, epsilon: Probability = 0.0) -> None:
        super().__init__()
        self.size, self.epsilon = size, epsilon

    def initial_state(self, batch_size: int) -> None:
        return None

    def forward(self, obs: torch.Tensor, state: None = None):
        if obs.shape[-1] == 2:  # coords observations: (row, col) / (size - 1)
            row, col = (obs * (self.size - 1)).round().long().unbind(-1)
        else:  # one-hot cells
            cell = obs.argmax(-1)
            row, col = cell // self.size, cell % self.size
        prefer = torch.zeros(obs.shape[0], 4)
        prefer[:, 1] = (row < self.size - 1).float()   # down
        prefer[:, 3] = (col < self.size - 1).float()   # right
        prefer = prefer / prefer.sum(-1, keepdim=True).clamp_min(1.0)
        probs = (1 - self.epsilon) * prefer + self.epsilon / 4
        return torch.log(probs.clamp_min(1e-12)), None, None


class LocalPolicy(nn.Module):
    """A pretrained policy from the local disk (never downloaded): a TorchScript file
    (torch.jit.save of a module keeping this file's contract, forward(obs, state) -> (logits,
    value, state)) at `path` or $EXPSPEC_RL_POLICY. Checked when built: a run without the file
    stops before anything trains, naming the path. Its parameters are fine-tuned like any policy's.

    Args:
        path: The .pt file; null: $EXPSPEC_RL_POLICY.
        recurrent: Width of its recurrent state (0: feed-forward); initial state zeros.
    """

    def __init__(self, path: str | None = None, recurrent: NonNegativeInt = 0) -> None:
        super().__init__()
        from components.local_assets import local_path

        found = local_path("local_policy", "model.path", path, "EXPSPEC_RL_POLICY",
                           "the pretrained policy (a TorchScript .pt file)",
                           how="Export the pretrained policy with torch.jit.save")
        self.net = torch.jit.load(found, map_location="cpu")
        self.recurrent = recurrent

    def initial_state(self, batch_size: int) -> torch.Tensor | None:
        return torch.zeros(batch_size, self.recurrent) if self.recurrent else None

    def forward(self, obs: torch.Tensor, state: torch.Tensor | None = None):
        return self.net(obs, state)
