"""The latent edit policy and its group-normalised policy gradient."""

from __future__ import annotations

import pytest
import torch

from components.editing.rewards import EditOnly
from components.editing.task import LatentEditPolicy, LatentEditRL, group_advantages, instruction_onehot


def test_group_advantages_are_normalised_per_input() -> None:
    rewards = torch.tensor([[1.0, 5.0], [3.0, 5.0], [5.0, 5.0]])   # G = 3 actions, B = 2 inputs
    advantages = group_advantages(rewards)
    assert torch.allclose(advantages[:, 0], torch.tensor([-1.0, 0.0, 1.0]) * 2 / (2 + 1e-4))   # std 2
    assert torch.equal(advantages[:, 1], torch.zeros(3))   # equal rewards: no signal


def test_instruction_onehot_indexes_factor_value_pairs() -> None:
    onehot = instruction_onehot(torch.tensor([0, 1, 4]), torch.tensor([2, 0, 1]))
    assert onehot.shape == (3, 14)
    assert onehot.argmax(1).tolist() == [2, 3, 13]   # shape 2; colour 0 after 3 shapes; size 1 last


def test_policy_starts_at_the_identity_edit() -> None:
    policy = LatentEditPolicy(latent_dim=6, hidden=16, std=0.7)
    distribution = policy(torch.randn(4, 6), instruction_onehot(torch.tensor([1, 1, 0, 4]), torch.tensor([0, 2, 1, 0])))
    assert torch.equal(distribution.mean, torch.zeros(4, 6))
    assert torch.allclose(distribution.stddev, torch.full((4, 6), 0.7))


def test_policy_gradient_moves_the_mean_toward_the_better_action() -> None:
    """One step of -mean(A log pi(a)) moves mu toward the action of positive advantage."""
    torch.manual_seed(0)
    policy = LatentEditPolicy(latent_dim=2, hidden=8, std=1.0)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    z, c = torch.zeros(1, 2), instruction_onehot(torch.tensor([1]), torch.tensor([0]))
    actions = torch.tensor([[[1.0, 0.0]], [[-1.0, 0.0]]])     # G = 2, B = 1
    advantages = group_advantages(torch.tensor([[1.0], [0.0]]))
    loss = -(advantages * policy(z, c).log_prob(actions).sum(-1)).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    mean = policy(z, c).mean[0]
    assert mean[0] > 0 and abs(float(mean[1])) < 1e-6


def test_task_refuses_what_it_cannot_edit() -> None:
    with pytest.raises(ValueError, match="latent_edit_rl edits in an editing_world, got Linear"):
        LatentEditRL(torch.nn.Linear(2, 2), optimizer=torch.optim.Adam, reward=EditOnly())
