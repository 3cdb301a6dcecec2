"""The off-policy words of the rl family (macrl): the multi-agent goal env, the episode replay
with hindsight relabelling (TorchRL storage), the shared actor, the critics, and one short fit of
each off-policy task through the framework."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium")
pytest.importorskip("torchrl")

from components.rl.goal_envs import MAGoalReach  # noqa: E402
from components.rl.goal_nets import ContrastiveCritic, SharedGaussianActor, TwinQ, UniformRandom, mlp  # noqa: E402
from components.rl.replay import EpisodeReplay, GoalLayout  # noqa: E402
from components.rl.rollout import collect  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _env(tolerance: float = 0.3, num_envs: int = 8) -> MAGoalReach:
    env = MAGoalReach(agents=2, tolerance=tolerance, max_episode_steps=10, num_envs=num_envs)
    env.reset(seed=0)
    return env


def test_goal_env_succeeds_only_when_every_agent_is_at_its_goal() -> None:
    env = _env(tolerance=0.1, num_envs=2)
    env.pos[:] = env.goal
    env.pos[1, 1] += 0.5  # env 1: the second agent is away
    obs, reward, terminated, truncated, info = env.step(np.zeros((2, 4)))
    assert terminated.tolist() == [True, False] and reward.tolist() == [1.0, 0.0]
    assert info["success"].tolist() == [True, False]
    assert env.compute_reward(obs["achieved_goal"], obs["desired_goal"]).tolist() == [1.0, 0.0]
    frozen = obs["observation"][0].copy()
    obs, reward, *_ = env.step(np.ones((2, 4)))
    assert reward[0] == 0 and np.array_equal(obs["observation"][0], frozen)  # finished: frozen


def test_tolerance_makes_random_success_rarer() -> None:
    rates = []
    for tol in (0.5, 0.1):
        env = _env(tolerance=tol, num_envs=256)
        episodes = collect(env, UniformRandom(4), 10)
        rates.append(episodes.success.float().mean().item())
    assert rates[0] > rates[1]


def _filled_replay(relabel: str, ratio: float = 1.0) -> tuple[EpisodeReplay, GoalLayout, MAGoalReach]:
    env = _env()
    layout = GoalLayout(env.single_observation_space, env)
    replay = EpisodeReplay(capacity=16, relabel=relabel, relabel_ratio=ratio)
    replay.configure(layout)
    torch.manual_seed(0)
    replay.add(collect(env, UniformRandom(4), 10), 10)
    return replay, layout, env


def test_her_future_relabels_goals_with_achieved_future_goals() -> None:
    replay, layout, env = _filled_replay("future", 1.0)
    batch = replay.sample(64)
    assert torch.equal(layout.desired(batch["obs"]), layout.achieved(batch["future_obs"]))
    assert torch.equal(layout.desired(batch["obs"]), layout.desired(batch["next_obs"]))
    # rewards recomputed from the relabelled goal: 1 exactly where the next state meets it
    expected = env.compute_reward(layout.achieved(batch["next_obs"]).numpy(), layout.desired(batch["obs"]).numpy())
    assert batch["reward"].tolist() == expected.tolist() and batch["reward"].sum() > 0
    assert torch.equal(batch["terminal"], batch["reward"] > 0)


def test_without_relabelling_the_goal_is_the_commanded_one() -> None:
    replay, layout, _ = _filled_replay("none")
    batch = replay.sample(64)
    stored = replay.buffer.storage._storage["obs"]
    assert all(any(torch.equal(layout.desired(o), layout.desired(e[0])) for e in stored) for o in batch["obs"])


def test_replay_state_round_trips() -> None:
    replay, layout, _ = _filled_replay("future")
    state = replay.state_dict()
    other = EpisodeReplay(capacity=16, relabel="future", relabel_ratio=1.0)
    other.configure(layout)
    other.load_state_dict(state)
    torch.manual_seed(1)
    a = replay.sample(8)
    torch.manual_seed(1)
    b = other.sample(8)
    assert len(other) == len(replay) and all(torch.equal(a[k], b[k]) for k in a)


def test_shared_actor_is_one_network_for_every_agent() -> None:
    actor = SharedGaussianActor(in_features=12, num_actions=4, agents=2)
    dist, value, state = actor(torch.randn(5, 12))
    action = dist.rsample()
    assert action.shape == (5, 4) and value is None and state is None
    assert action.abs().max() < 1 and dist.log_prob(action).shape == (5,)
    assert dist.mean.shape == (5, 4)


def test_residual_depth_and_critics() -> None:
    deep = mlp(6, 3, 16, 16, residual=True)
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in deep.modules()) == 17
    with pytest.raises(ValueError):
        mlp(6, 3, 16, 6, residual=True)
    critic = ContrastiveCritic(state_features=8, num_actions=4, goal_features=4, depth=4, residual=True)
    s, a, g = torch.randn(7, 8), torch.randn(7, 4), torch.randn(7, 4)
    logits = critic.logits(s, a, g)
    assert logits.shape == (7, 7) and torch.allclose(logits.diagonal(), critic(s, a, g), atol=1e-4)
    q1, q2 = TwinQ(12, 4)(torch.randn(3, 12), torch.randn(3, 4))
    assert q1.shape == q2.shape == (3,) and not torch.equal(q1, q2)


@pytest.mark.parametrize("spec", ["tiny_macrl.yaml", "tiny_sac_her.yaml", "tiny_sac.yaml"])
def test_each_off_policy_task_fits_through_the_framework(tracked: str, spec: str) -> None:
    from framework.runner import run

    result = run(ROOT / "specs/macrl" / spec, ["data.iterations=2", "data.test_batches=1", "data.env.num_envs=8",
                                               "task.updates=3", "task.batch_size=16"])
    assert 0 <= result.metrics["test/success_rate"] <= 1
    assert "train/critic_loss" in result.metrics and "train/alpha" in result.metrics


def test_vmas_goal_wraps_a_vmas_scenario() -> None:
    pytest.importorskip("vmas")
    from components.rl.goal_envs import VmasGoal

    env = VmasGoal("navigation", agents=2, num_envs=2, max_episode_steps=3)
    obs, info = env.reset(seed=0)
    assert obs["achieved_goal"].shape == (2, 4) and obs["desired_goal"].shape == (2, 4)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(np.zeros((2, 4)))
    assert (terminated | truncated).all()


def test_vmas_goal_fails_clearly_without_vmas(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from components.rl.goal_envs import VmasGoal

    monkeypatch.setitem(sys.modules, "vmas", None)  # as if not installed: importing it raises ImportError
    with pytest.raises(ImportError, match=r"vmas_goal needs `vmas`, which comes with the optional extra 'rl': "
                                          r"pip install 'expspec\[rl\]'"):
        VmasGoal()
