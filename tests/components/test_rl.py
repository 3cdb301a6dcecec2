"""The rl family's pieces (components/rl/): the gymnasium vector env, episode collection, the
returns and advantages from TorchRL, the tasks' losses, the dense reward, the env state that
resume restores, and a heuristic policy measured by the same task with no updates."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium")
pytest.importorskip("torchrl")

from components.rl.data import Rollouts  # noqa: E402
from components.rl.envs import SlipperyGrid, env_state, gym_make, load_env_state, normalize_observation  # noqa: E402
from components.rl.policies import ActorCritic, GridGoalSeeking  # noqa: E402
from components.rl.rewards import VisitationMatching  # noqa: E402
from components.rl.rollout import collect  # noqa: E402
from components.rl.tasks import PPO, OnPolicy, Reinforce  # noqa: E402


def _grid(**kwargs) -> SlipperyGrid:
    env = SlipperyGrid(**{"size": 4, "slip": 0.2, "max_episode_steps": 12, "num_envs": 8, **kwargs})
    env.reset(seed=0)
    return env


def test_slippery_grid_is_a_gymnasium_vector_env_with_disabled_autoreset() -> None:
    import gymnasium

    env = _grid()
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.DISABLED
    obs, info = env.reset(seed=3)
    assert obs.shape == (8, 16) and (obs.sum(1) == 1).all() and obs[:, 0].all()
    assert env.observation_space.contains(obs)
    # the same seed, the same episodes; a finished env stays frozen (reward 0, done again)
    runs = []
    for _ in range(2):
        env.reset(seed=5)
        steps = [env.step(np.full(8, 3)) for _ in range(14)]
        runs.append(np.stack([s[0] for s in steps]))
        ended = np.stack([s[2] | s[3] for s in steps])
        assert ended.any(0).all() and (ended.sum(0) >= 1).all()
        last = steps[-1]
        assert (last[1] == 0).all()
    assert (runs[0] == runs[1]).all()


def test_goal_is_terminated_with_reward_one_and_success_and_the_time_limit_truncates() -> None:
    env = SlipperyGrid(size=2, slip=0.0, max_episode_steps=3, num_envs=2)
    env.reset(seed=0)
    _, r, term, trunc, info = env.step(np.array([3, 0]))   # right; up (into the wall)
    assert r.tolist() == [0, 0] and not term.any()
    _, r, term, trunc, info = env.step(np.array([1, 0]))   # down: goal for env 0
    assert r.tolist() == [1, 0] and term.tolist() == [True, False] and info["success"].tolist() == [True, False]
    _, r, term, trunc, info = env.step(np.array([0, 0]))
    assert trunc.tolist() == [False, True] and r.tolist() == [0, 0]


def test_wall_masks_come_in_info_and_masked_actions_are_never_taken() -> None:
    env = _grid(mask_walls=True, slip=0.0)
    _, info = env.reset(seed=0)
    assert info["action_mask"].tolist()[0] == [False, True, False, True]  # corner: only down, right
    policy = ActorCritic(16, 4, hidden=(), zero_init=True)
    episodes = collect(env, policy, 12)
    assert episodes.masks is not None
    taken = episodes.masks.gather(-1, episodes.actions[..., None])[..., 0]
    assert taken[episodes.alive].all()


def test_collect_pads_whole_episodes_and_marks_outcomes() -> None:
    env = _grid()
    torch.manual_seed(0)
    episodes = collect(env, GridGoalSeeking(size=4), 12)
    B, T = episodes.actions.shape
    assert B == 8 and episodes.obs.shape == (8, T + 1, 16)
    assert (episodes.lengths == episodes.last + 1).all()
    returns = (episodes.rewards * episodes.alive).sum(1)
    assert torch.equal(returns.bool(), episodes.success)   # reward 1 exactly at success
    assert episodes.metrics()["success_rate"] > 0.5


def test_returns_to_go_restart_at_each_episode_end() -> None:
    env = _grid()
    episodes = collect(env, GridGoalSeeking(size=4), 12)
    rewards = torch.ones_like(episodes.rewards) * episodes.alive
    G = OnPolicy.returns(rewards, episodes, 1.0)
    expected = episodes.lengths[:, None] - torch.arange(G.shape[1])[None]
    assert torch.equal(G[episodes.alive], expected.float()[episodes.alive])


def test_ppo_advantages_are_torchrl_gae_with_bootstrap_only_on_truncation() -> None:
    env = _grid(slip=0.5, max_episode_steps=5)
    torch.manual_seed(1)
    policy = ActorCritic(16, 4, hidden=(8,))
    episodes = collect(env, policy, 5)
    task = PPO(policy, gamma=0.9, gae_lambda=1.0)
    rewards = episodes.rewards
    adv, target = task.advantages(episodes, rewards)
    v = episodes.values
    for b in range(8):   # lambda = 1: the discounted return (+ bootstrap if truncated) minus V
        n = int(episodes.lengths[b])
        tail = 0.0 if episodes.terminated[b] else float(v[b, n])
        G = tail
        for t in reversed(range(n)):
            G = float(rewards[b, t]) + 0.9 * G
            assert adv[b, t].item() == pytest.approx(G - float(v[b, t]), abs=1e-5)


def _optimized(task: OnPolicy, lr: float):
    task.optimizers = lambda: torch.optim.SGD(task.model.parameters(), lr=lr)
    task.manual_backward = lambda loss: loss.backward()
    return task.optimizers()


def test_reinforce_raises_the_probability_of_successful_actions() -> None:
    env = _grid(slip=0.0)
    torch.manual_seed(0)
    policy = ActorCritic(16, 4, hidden=(), zero_init=True)
    task = Reinforce(policy, optimizer=None, baseline="mean")
    optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    task.manual_backward = lambda loss: loss.backward()
    before = collect(_grid(slip=0.0, num_envs=256), policy, 12).success.float().mean()
    for _ in range(30):
        episodes = collect(env, policy, 12)
        task.update(episodes, episodes.rewards, optimizer)
    after = collect(_grid(slip=0.0, num_envs=256), policy, 12).success.float().mean()
    assert after > before + 0.2


def test_recurrent_ppo_with_masks_updates_and_replays_whole_episodes() -> None:
    env = _grid(mask_walls=True)
    torch.manual_seed(0)
    policy = ActorCritic(16, 4, hidden=(8,), recurrent=6)
    task = PPO(policy, optimizer=None, epochs=2, minibatches=2)
    episodes = collect(env, policy, 12)
    logp, _, values = task.replay(episodes, torch.arange(8))
    assert torch.allclose(logp[episodes.alive], episodes.log_probs[episodes.alive], atol=1e-5)
    assert torch.allclose(values, episodes.values[:, :-1], atol=1e-5)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)

    class Wrapped:  # what Lightning hands a manual-optimization task
        def __init__(self, opt): self.optimizer = opt
        def step(self): self.optimizer.step()
        def zero_grad(self): self.optimizer.zero_grad()

    task.manual_backward = lambda loss: loss.backward()
    weights = [p.detach().clone() for p in policy.parameters()]
    task.update(episodes, episodes.rewards, Wrapped(optimizer))
    assert any(not torch.equal(a, b) for a, b in zip(weights, policy.parameters()))


def test_visitation_matching_is_the_smoothed_log_density_ratio_and_shuffling_keeps_the_counts() -> None:
    env = _grid()
    torch.manual_seed(0)
    episodes = collect(env, GridGoalSeeking(size=4, epsilon=0.5), 12)
    reward = VisitationMatching(16, beta=0.5, smoothing=1.0)
    assert torch.equal(reward(episodes), torch.zeros_like(episodes.rewards))   # nothing seen yet
    reward.observe(episodes)
    cells = episodes.states_after.argmax(-1)
    plus = torch.zeros(16)
    for b in range(8):
        if episodes.success[b]:
            plus += torch.bincount(cells[b][episodes.alive[b]], minlength=16)
    assert torch.equal(reward.success_counts, plus)
    d_plus = (plus + 1) / (plus.sum() + 16)
    d_minus = (reward.failure_counts + 1) / (reward.failure_counts.sum() + 16)
    expected = 0.5 * (d_plus / d_minus).log()[cells] * episodes.alive
    assert torch.allclose(reward(episodes), expected)
    shuffled = VisitationMatching(16, shuffle_labels=True)
    shuffled.observe(episodes)
    total = reward.success_counts.sum() + reward.failure_counts.sum()
    assert shuffled.success_counts.sum() + shuffled.failure_counts.sum() == total
    with pytest.raises(ValueError, match="one-hot"):
        VisitationMatching(2).observe(collect(_grid(observation="coords"), GridGoalSeeking(size=4), 12))


def test_env_state_round_trip_repeats_the_same_draws_through_wrappers() -> None:
    env = normalize_observation(_grid(observation="coords"))
    env.reset(seed=1)
    policy = GridGoalSeeking(size=4)
    collect(env, ActorCritic(2, 4), 12)
    saved = env_state(env)
    assert len(saved) == 2 and "obs_rms" in saved[0] and "np_random" in saved[1]
    torch.manual_seed(0)
    first = collect(env, ActorCritic(2, 4), 12)
    load_env_state(env, saved)
    torch.manual_seed(0)
    again = collect(env, ActorCritic(2, 4), 12)
    assert torch.equal(first.obs, again.obs) and torch.equal(first.actions, again.actions)
    del policy


def test_rollouts_data_checks_sizes_and_keeps_the_env_state() -> None:
    data = Rollouts(env=_grid(), iterations=5, test_batches=2, seed=4)
    assert data.info() == {"in_features": 16, "num_actions": 4}
    data.setup("fit")
    assert len(list(data.train_dataloader())) == 5
    state = data.state_dict()
    other = Rollouts(env=_grid(), iterations=5, seed=9)
    other.setup("fit")
    other.load_state_dict(state)
    torch.manual_seed(0)
    a = collect(data.env, GridGoalSeeking(size=4), 12)
    torch.manual_seed(0)
    b = collect(other.env, GridGoalSeeking(size=4), 12)
    assert torch.equal(a.obs, b.obs)
    assert Reinforce.check_data({"num_actions": 4}, {"num_actions": 5})


def test_gym_make_wraps_a_gymnasium_env_with_time_limit() -> None:
    env = gym_make("CartPole-v1", num_envs=3, max_episode_steps=7)
    env.reset(seed=0)
    episodes = collect(env, ActorCritic(4, 2), env.max_episode_steps)
    assert episodes.actions.shape[0] == 3 and (episodes.lengths <= 7).all()
    assert episodes.metrics()["episode_return"] == pytest.approx(episodes.lengths.float().mean().item())


def test_a_heuristic_is_run_by_the_same_task_with_no_updates(tracked: str) -> None:
    """A policy without parameters (optimizer: null): the fit collects and logs its rollouts, the
    test measures it; global_step counts rollouts."""
    from pathlib import Path

    from framework.runner import run

    spec = Path(__file__).resolve().parents[2] / "specs/dense_reward/tiny_sparse.yaml"
    result = run(spec, ["init=null", "optimizer=null", "model={type: grid_goal_seeking, size: 10}",
                        "data.iterations=3", "data.test_batches=2"])
    assert result.metrics["test/success_rate"] > 0.5      # the goal-seeking heuristic mostly succeeds
    assert "train/loss" not in result.metrics and "train/success_rate" in result.metrics


def test_missing_extra_names_the_rl_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from framework.extras import require

    real = builtins.__import__

    def no_torchrl(name, *args, **kwargs):
        if name.startswith("torchrl"):
            raise ImportError("no torchrl")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torchrl)
    import sys
    for key in [k for k in sys.modules if k.startswith("torchrl")]:
        monkeypatch.delitem(sys.modules, key)
    with pytest.raises(ImportError, match=r"expspec\[rl\]"):
        require("torchrl.objectives.value.functional", "the rl tasks")


def test_gaussian_policy_collects_and_replays_continuous_actions() -> None:
    """Continuous actions (gymnasium's Pendulum, a Box action): the policy returns a Normal, the
    tasks' replay gives the collected log-probs back and PPO updates it."""
    env = gym_make("Pendulum-v1", num_envs=4, max_episode_steps=6)
    env.reset(seed=0)
    torch.manual_seed(0)
    policy = ActorCritic(3, 1, hidden=(8,), actions="gaussian")
    episodes = collect(env, policy, 6)
    assert episodes.actions.shape == (4, 6, 1) and episodes.actions.dtype == torch.float32
    task = PPO(policy, epochs=1, minibatches=1)
    logp, entropy, values = task.replay(episodes, torch.arange(4))
    assert torch.allclose(logp, episodes.log_probs, atol=1e-5) and entropy.shape == (4, 6)
    greedy = collect(env, policy, 6, greedy=True)
    assert torch.isfinite(greedy.actions).all()
    recurrent = ActorCritic(3, 1, hidden=(8,), recurrent=4, actions="gaussian")
    episodes = collect(env, recurrent, 6)
    logp, _, _ = PPO(recurrent).replay(episodes, torch.arange(4))
    assert torch.allclose(logp, episodes.log_probs, atol=1e-5)


def test_logistic_discriminator_learns_the_log_ratio_of_success_states() -> None:
    """estimator: logistic on coordinate observations: after training on the goal-seeking
    heuristic's episodes, states near the goal (visited by successes) score above the start."""
    env = _grid(observation="coords", slip=0.6, max_episode_steps=8, num_envs=64)
    torch.manual_seed(0)
    reward = VisitationMatching(2, beta=1.0, estimator="logistic", hidden=(16,), lr=0.05, steps=20)
    episodes = collect(env, GridGoalSeeking(size=4), 8)
    assert torch.equal(reward(episodes), torch.zeros_like(episodes.rewards))   # untrained: 0
    for _ in range(5):
        episodes = collect(env, GridGoalSeeking(size=4), 8)
        assert 0 < episodes.success.sum() < 64
        reward.observe(episodes)
    near_goal, start = reward.potential(torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    assert near_goal > start
    state = reward.state_dict()
    assert "_extra_state" in state and state["_extra_state"]["optimizer"]["state"]


def test_rollouts_refuse_an_env_that_is_not_a_vector_env_and_say_why() -> None:
    """A differentiable plant (the motor family's `two_link_arm`) in `data: {type: rollouts}`:
    the data module says what it needs and where plants are trained, instead of an AttributeError."""

    class Plant:  # a gymnasium.Env in torch: no num_envs, no single_action_space
        pass

    with pytest.raises(TypeError, match=r"data.env: rollouts collect whole episodes from a gymnasium vector env .* "
                                        r"Plant is not one; .*plant_bptt"):
        Rollouts(Plant())
