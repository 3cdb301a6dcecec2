"""pd_autoscale's serving simulator (components/rl/serving.py, policies in autoscalers.py): the gymnasium vector env's API,
pod start-up delay and GPU accounting, SLO violations under overload, the hard masks and the
cooldown, exact resume from get_state, the trace-file reader and its missing-file error, and the
threshold heuristic and static pool measured by the rl tasks' collector."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium")

from components.rl.rollout import collect  # noqa: E402
from components.rl.autoscalers import PoolActorCritic, StaticPool, ThresholdAutoscaler  # noqa: E402
from components.rl.serving import COL, NOOP, OBSERVATION, PDServing, action_of, read_trace  # noqa: E402


def _env(**kwargs) -> PDServing:
    env = PDServing(**{"num_envs": 4, "max_episode_steps": 10, **kwargs})
    env.reset(seed=0)
    return env


def test_a_gymnasium_vector_env_with_a_dict_observation_and_an_action_mask() -> None:
    import gymnasium

    env = _env()
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.DISABLED
    obs, _ = env.reset(seed=1)
    assert obs["features"].shape == (4, len(OBSERVATION)) and obs["action_mask"].shape == (4, 9)
    assert env.single_action_space.n == 9 and obs["action_mask"][:, NOOP].all()
    for t in range(10):
        obs, reward, term, trunc, _ = env.step(np.full(4, NOOP))
        assert reward.shape == (4,) and (reward < 0).all() and not term.any()
        assert trunc.all() == (t == 9)
    # finished: frozen, reward 0
    again = env.step(np.full(4, NOOP))
    assert (again[1] == 0).all() and np.array_equal(again[0]["features"], obs["features"])
    metrics = env.episode_metrics()
    assert set(metrics) == {"gpus", "slo_attainment", "scaling_events", "ttft_violations", "tpot_violations"}
    assert np.allclose(metrics["gpus"], 8) and (metrics["scaling_events"] == 0).all()


def test_same_seed_same_episodes_and_get_state_resumes_exactly() -> None:
    env = _env()
    runs = []
    for _ in range(2):
        env.reset(seed=7)
        runs.append([env.step(np.full(4, action_of(1, -1)))[1] for _ in range(5)])
    assert np.array_equal(np.stack(runs[0]), np.stack(runs[1]))
    env.reset(seed=3)
    env.step(np.full(4, action_of(1, 0)))
    saved, rng = env.get_state(), env.np_random.bit_generator.state
    first = [env.step(np.full(4, NOOP))[0]["features"] for _ in range(4)]
    env.set_state(saved)
    env.np_random.bit_generator.state = rng
    second = [env.step(np.full(4, NOOP))[0]["features"] for _ in range(4)]
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


def test_a_new_pod_holds_its_gpu_while_pending_and_serves_after_startup() -> None:
    env = _env(startup=2, cooldown=0, initial_prefill=2, initial_decode=2)
    env.step(np.full(4, action_of(1, 0)))
    assert (env.ready[:, 0] == 2).all() and (env.pending[:, 0].sum(1) == 1).all()
    assert np.allclose(env.gpu_sum, 5)  # 2 + 2 ready + 1 pending
    env.step(np.full(4, NOOP))
    assert (env.ready[:, 0] == 2).all()
    env.step(np.full(4, NOOP))
    assert (env.ready[:, 0] == 3).all() and (env.pending.sum((1, 2)) == 0).all()
    assert (env.events == 1).all()


def test_overload_violates_the_slo_and_ample_capacity_does_not() -> None:
    heavy = _env(base_rate=100.0, amplitude=0.0, burst_prob=0.0, initial_prefill=1, initial_decode=1)
    heavy.step(np.full(4, NOOP))
    assert (heavy.violations == 1).all() and (heavy.feat[:, COL["violated"]] == 1).all()
    light = _env(base_rate=2.0, amplitude=0.0, burst_prob=0.0, initial_prefill=8, initial_decode=8)
    for _ in range(10):
        light.step(np.full(4, NOOP))
    assert (light.episode_metrics()["slo_attainment"] == 1).all()


def test_masks_forbid_infeasible_changes_and_the_cooldown_any_change() -> None:
    env = _env(initial_prefill=8, initial_decode=1, startup=1, cooldown=2)
    mask = env.action_mask()
    assert not mask[:, action_of(1, 0)].any() and not mask[:, action_of(0, -1)].any()  # max / min pods
    assert mask[:, action_of(-1, 1)].all()
    env.step(np.full(4, action_of(-1, 1)))
    mask = env.action_mask()
    # both pools just changed: only holding is allowed for 2 windows
    assert mask.sum(1).tolist() == [1] * 4 and mask[:, NOOP].all()
    env.step(np.full(4, NOOP))
    env.step(np.full(4, NOOP))
    assert env.action_mask()[:, action_of(-1, -1)].all()
    # without masks: every action allowed, an infeasible change is a no-op, no cooldown
    free = _env(masks=False, initial_prefill=8, initial_decode=1, cooldown=5)
    assert free.action_mask().all() and free.cooldown == 0
    free.step(np.full(4, action_of(1, -1)))
    assert (free.ready[:, 0] == 8).all() and (free.ready[:, 1] == 1).all() and (free.events == 0).all()


def test_the_threshold_heuristic_scales_with_the_load_and_holds_when_masked() -> None:
    policy = ThresholdAutoscaler(up=0.8, down=0.7, max_pods=8)
    obs = torch.zeros(3, len(OBSERVATION))
    obs[:, COL["prefill_ready"]] = obs[:, COL["decode_ready"]] = 4 / 8
    obs[:, COL["prefill_load"]] = torch.tensor([1.0, 0.7, 0.2])   # up, hold, down
    obs[:, COL["decode_load"]] = torch.tensor([0.2, 0.9, 0.7])    # down, up, hold
    logits, value, _ = policy(obs)
    assert value is None and logits.argmax(-1).tolist() == [action_of(1, -1), action_of(0, 1), action_of(-1, 0)]
    masked = logits.masked_fill(torch.tensor([[i != action_of(0, -1) and i != NOOP for i in range(9)]] * 3), float("-inf"))
    assert masked.argmax(-1)[0].item() == action_of(0, -1)  # prefill's +1 masked: hold it, keep decode's -1


def test_heuristics_and_the_learned_policy_run_through_the_rl_collector() -> None:
    env = _env(num_envs=8, max_episode_steps=30)
    tuned = collect(env, ThresholdAutoscaler(up=0.7), 30, greedy=True)
    static = collect(env, StaticPool(), 30, greedy=True)
    assert tuned.extra["scaling_events"].mean() > 0 and (static.extra["scaling_events"] == 0).all()
    assert torch.allclose(static.extra["gpus"], torch.full((8,), 8.0, dtype=torch.float64))
    policy = PoolActorCritic(len(OBSERVATION), 9, hidden=(8,), recurrent=4, hold_bias=2.0)
    episodes = collect(env, policy, 30)
    assert episodes.masks is not None and episodes.masks.gather(2, episodes.actions[..., None]).all()
    probs = torch.softmax(policy(torch.zeros(1, len(OBSERVATION)), None)[0], -1)[0]
    assert probs[NOOP] == probs.max() and probs[NOOP] > 0.4


def test_a_trace_file_is_read_binned_and_a_missing_one_stops_early(tmp_path, monkeypatch) -> None:
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    rows += [f"{t * 0.5},{400 + t % 7},{200 + t % 5}" for t in range(4000)]  # 2 req/s for 2000 s
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    data = read_trace(str(path))
    assert data.shape == (4000, 3) and data[0, 0] == 0
    env = PDServing(num_envs=2, max_episode_steps=10, trace="file", trace_path=str(path), window=(0.0, 0.8))
    assert env.base_rate == pytest.approx(2.0, rel=0.01)
    env.reset(seed=0)
    env.step(np.full(2, NOOP))
    assert np.allclose(env.feat[:, COL["rate"]], 1.0, atol=0.05)
    monkeypatch.delenv("PD_AUTOSCALE_TRACE", raising=False)
    with pytest.raises(FileNotFoundError, match=r"pd_serving: request trace CSV .* not found .*PD_AUTOSCALE_TRACE"):
        PDServing(trace="file")


def test_the_test_copy_draws_its_episodes_from_the_held_out_part_of_the_trace(tmp_path) -> None:
    """The rollouts data module's test env starts its episodes inside `test_window`, the training
    env inside `window`; overlapping fractions, a fraction shorter than an episode, and a
    test_window on the synthetic trace are refused."""
    from components.rl.data import Rollouts

    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{t * 0.5},400,200" for t in range(8000)]  # 4000 s
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    span = 3999.5
    env = PDServing(num_envs=64, max_episode_steps=10, tick=30.0, trace="file", trace_path=str(path),
                    window=(0.0, 0.7), test_window=(0.7, 1.0))
    data = Rollouts(env, seed=0)
    data.setup("fit")
    data.setup("test")
    assert env.offset.max() <= 0.7 * span - 300 and data.test_env.offset.min() >= 0.7 * span
    assert data.test_env.offset.max() <= span - 300 and env.window == (0.0, 0.7)  # the train env is untouched
    with pytest.raises(ValueError, match=r"test_window \(0.6, 1.0\) overlaps window \(0.0, 0.7\)"):
        PDServing(trace="file", trace_path=str(path), window=(0.0, 0.7), test_window=(0.6, 1.0))
    with pytest.raises(ValueError, match=r"its test_window \(0.99, 1.0\) spans 40 s, less than one episode"):
        PDServing(max_episode_steps=10, trace="file", trace_path=str(path), window=(0.0, 0.7), test_window=(0.99, 1.0))
    with pytest.raises(ValueError, match="test_window splits a trace file"):
        PDServing(test_window=(0.8, 1.0))
