"""pd_autoscale's autoscaling policies for the serving simulator (components/rl/serving.py): the
parameter-free threshold heuristic and static pools it is compared with, and the learned policy's
two-pool actor-critic. They read the simulator's observation columns (`COL`) and act in its
9 joint actions (a change of -1, 0, +1 pod per pool).
"""

from __future__ import annotations

import torch
from torch import nn

from components.rl.policies import ActorCritic
from components.rl.serving import COL, NOOP
from components.types import NonNegativeInt, PositiveFloat, PositiveInt, Probability


class ThresholdAutoscaler(nn.Module):
    """The threshold heuristic (a policy without parameters): per pool, add a pod when its load
    relative to the SLO capacity of its provisioned (ready + pending) pods exceeds `up`, remove one
    when the load would stay below `down` x `up` with one pod fewer, else hold. The load is
    normalized per pool by the utilization at which that pool's P99 latency meets its target (the
    `prefill_load` / `decode_load` features), so one `up` is fair to both pools; `up` is the knob
    the grid search (an `exp sweep`) tunes. A masked choice falls back to holding that pool.

    Args:
        up: Scale-up threshold on the load (1 = exactly at the SLO capacity).
        down: Scale down when the load with one pod fewer would be below down x up.
        max_pods: The env's max_pods (to read the pod counts).
    """

    def __init__(self, up: PositiveFloat = 0.8, down: Probability = 0.7, max_pods: PositiveInt = 8) -> None:
        super().__init__()
        self.up, self.down, self.max_pods = up, down, max_pods

    def initial_state(self, batch_size: int) -> None:
        return None

    def forward(self, obs: torch.Tensor, state: None = None):
        change = []
        for pool in ("prefill", "decode"):
            load = obs[:, COL[f"{pool}_load"]]
            pods = ((obs[:, COL[f"{pool}_ready"]] + obs[:, COL[f"{pool}_pending"]]) * self.max_pods).round()
            fewer = load * pods / (pods - 1).clamp_min(1)
            change.append(torch.where(load > self.up, 1, torch.where((pods > 1) & (fewer < self.down * self.up), -1, 0)))
        return _prefer(change[0], change[1]), None, None


class StaticPool(nn.Module):
    """Never scales (the pools stay at the env's initial sizes): the static-provisioning floor."""

    def __init__(self) -> None:
        super().__init__()

    def initial_state(self, batch_size: int) -> None:
        return None

    def forward(self, obs: torch.Tensor, state: None = None):
        zero = torch.zeros(obs.shape[0], dtype=torch.long)
        return _prefer(zero, zero), None, None


def _prefer(prefill: torch.Tensor, decode: torch.Tensor) -> torch.Tensor:
    """Logits (B, 9) that pick (prefill, decode) changes, falling back per pool to holding when
    masked: score 0 for the chosen change, -30 for holding, -60 otherwise, summed over pools."""
    score = []
    for want in (prefill, decode):
        s = torch.full((len(want), 3), -60.0)
        s[:, 1] = -30.0
        s[torch.arange(len(want)), want + 1] = 0.0
        score.append(s)
    return (score[0][:, :, None] + score[1][:, None, :]).reshape(-1, 9)


class PoolActorCritic(ActorCritic):
    """components.rl.policies' ActorCritic (MLP torso, GRU, policy and value heads) made for the
    two pools: with `factorized` the policy head gives 3 logits per pool (-1, 0, +1 pod) and the
    joint action's logit is their sum (a product of per-pool distributions over the 9 joint
    actions, so each pool's rule is learned on its own); the head starts at zero weights with a
    bias `hold_bias` on each pool's no-change logit, so the untrained policy mostly holds the
    pools instead of random-walking them (autoscaling-specific, hence here and not in policies.py).

    Args:
        in_features, hidden, recurrent: As in actor_critic.
        num_actions: 9 (the env's joint actions).
        factorized: Per-pool logits summed (else 9 free logits, hold_bias on the joint no-change).
        hold_bias: The initial logit of no change.
    """

    def __init__(self, in_features: PositiveInt, num_actions: PositiveInt = 9, hidden: tuple[PositiveInt, ...] = (32,),
                 recurrent: NonNegativeInt = 16, factorized: bool = True, hold_bias: float = 2.0) -> None:
        if num_actions != 9:
            raise ValueError(f"num_actions must be 9 (3 changes x 2 pools), got {num_actions}")
        super().__init__(in_features, 6 if factorized else 9, hidden, recurrent, zero_init=True)
        self.factorized = factorized
        with torch.no_grad():
            if factorized:
                self.policy_head.bias[1] = self.policy_head.bias[4] = hold_bias
            else:
                self.policy_head.bias[NOOP] = hold_bias

    def forward(self, obs: torch.Tensor, state: torch.Tensor | None = None):
        logits, value, state = super().forward(obs, state)
        if self.factorized:
            logits = (logits[:, :3, None] + logits[:, None, 3:]).reshape(-1, 9)
        return logits, value, state
