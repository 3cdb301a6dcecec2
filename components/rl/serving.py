"""pd_autoscale's serving simulator: prefill/decode (PD) disaggregated LLM serving as a gymnasium
vector env (`envs` kind). The policies that act in it: components/rl/autoscalers.py.

`PDServing` steps `num_envs` independent clusters in numpy, one decision every `tick` seconds
(a window). Each window:

- Arrivals: Poisson(rate(t) x tick) requests with lognormal prompt and output lengths
  (ShareGPT-like means), where rate(t) = base_rate x (1 + amplitude x sin(2 pi t / period + phase))
  x a burst factor (bursts start with probability `burst_prob` per window and last `burst_len`),
  and the length means drift by a slow random walk (`trace: synthetic`, all draws from
  env.np_random); or the requests of a trace file binned into windows (`trace: file`, a CSV of
  timestamp, prompt tokens, output tokens per request: Azure LLM inference / ShareGPT-replay
  layout), each episode starting at a random offset inside the `window` fraction of the file; the
  test copy the rollouts data module makes draws from `test_window` instead (`use_test_split`), a
  fraction that may not overlap `window`: held-out traces.
- Prefill pool (compute bound): `prefill_rate` prompt tokens/s per ready pod. Utilization
  rho = (prompt tokens + backlog) / capacity; what exceeds capacity is carried as backlog. P99
  TTFT = the P99 prompt's prefill time x (1 + ln(100) rho / (1 - rho)) (an M/M/1-style tail of the
  queueing wait) + the backlog's drain time.
- Decode pool (memory bound): the per-token time of a pod at batch b is t0 + t1 b
  (`decode_base_ms`, 1000 / `decode_rate`); serving the window's output-token demand d per pod
  needs rho = d t1 < 1, and the P99 TPOT is `tpot_tail` x t0 / (1 - rho) (overload: the excess
  is backlog and the TPOT is infinite).
- A window violates the SLO when its P99 TTFT exceeds `ttft_slo_ms` or its P99 TPOT exceeds
  `tpot_slo_ms`; SLO attainment = the fraction of windows without a violation.
- GPU pools: `min_pods`..`max_pods` per pool, one GPU per pod. A pod added is pending (it holds its
  GPU but serves nothing) for `startup` windows, then ready; a pod removed frees its GPU at once
  (a pending one first).

Actions: Discrete(9) = 3 x prefill change + decode change, each of {-1, 0, +1} pod (4 = no
change). The observation is a dict: `features` (OBSERVATION names each column; loads are also
given relative to the pool's SLO capacity, the utilization at which its P99 latency meets the
target) and `action_mask` (bool (9,)). With `masks: true` the mask forbids infeasible changes
(beyond min/max pods, removing while a pod of the pool is pending) and, with `cooldown` > 0, any
change of a pool within `cooldown` windows of its last change (anti-oscillation); with `masks:
false` every action is allowed (an infeasible change is a no-op) and there is no cooldown.

Reward per window: -(GPUs held) / gpu_scale - slo_penalty x (SLO violations of the window: P99
TTFT over its target, P99 TPOT over its target, each counted). Episode metrics
(logged as train/<name>, test/<name>): gpus (mean GPUs held per window), slo_attainment,
scaling_events (pods added + removed per episode), ttft_violations and tpot_violations (fraction
of windows).

Written by hand: there is no packaged PD-serving simulator on the gymnasium API; the latency model
is the one of NOTES.md (a queueing tail on a calibration of per-pod rates), not a profiled one.
"""

from __future__ import annotations

import csv
import math
import os
from typing import Any, Literal

import numpy as np

from framework.extras import require
from components.types import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Probability

gym = require("gymnasium", "the pd_autoscale serving simulator")
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402

# The columns of the `features` observation, in order (the heuristics read them by name).
OBSERVATION = (
    "rate",             # arrivals this window / base_rate
    "rate_fast",        # EMA of the rate, 2-window time constant
    "rate_slow",        # EMA of the rate, 10-window time constant
    "prompt_len",       # mean prompt length this window / prompt_mean
    "output_len",       # mean output length this window / output_mean
    "prefill_util",     # prefill utilization of the ready pods (capped at 3)
    "decode_util",      # decode utilization of the ready pods (capped at 3)
    "prefill_load",     # prefill load / SLO capacity of the ready + pending pods (1: at the SLO)
    "decode_load",      # decode load / SLO capacity of the ready + pending pods
    "prefill_backlog",  # prefill backlog in windows of the ready pods' capacity (capped at 3)
    "prefill_ready", "prefill_pending", "decode_ready", "decode_pending",  # / max_pods
    "prefill_cooldown", "decode_cooldown",  # windows left / cooldown
    "ttft",             # P99 TTFT / its target (capped at 3)
    "tpot",             # P99 TPOT / its target (capped at 3)
    "violated",         # this window violated the SLO
    "time",             # t / max_episode_steps
)
COL = {name: i for i, name in enumerate(OBSERVATION)}
DELTAS = np.array([-1, 0, 1])
NOOP = 4
LN100 = math.log(100.0)


def action_of(prefill: np.ndarray | int, decode: np.ndarray | int) -> Any:
    """The joint action of the per-pool changes (each -1, 0, +1)."""
    return (np.asarray(prefill) + 1) * 3 + (np.asarray(decode) + 1)


def read_trace(path: str) -> np.ndarray:
    """(n, 3) float array (timestamp s, prompt tokens, output tokens) of a CSV trace, sorted by
    time: a header row naming the columns (Azure LLM inference: TIMESTAMP, ContextTokens,
    GeneratedTokens; or timestamp, prompt_tokens, output_tokens), ISO timestamps or seconds."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"trace {path} has no requests")
    header = [h.strip().lower() for h in rows[0]]

    def col(*names: str) -> int:
        for name in names:
            if name in header:
                return header.index(name)
        raise ValueError(f"trace {path}: no column among {names} in header {rows[0]}")

    it, ip, io = col("timestamp", "time"), col("contexttokens", "prompt_tokens", "input_tokens"), \
        col("generatedtokens", "output_tokens")
    stamps = [r[it] for r in rows[1:] if r]
    try:
        times = np.array([float(s) for s in stamps])
    except ValueError:
        times = np.array([np.datetime64(s.strip().replace(" ", "T")[:26]) for s in stamps]).astype("datetime64[us]")
        times = (times - times.min()).astype(np.float64) / 1e6
    data = np.stack([times, [float(r[ip]) for r in rows[1:] if r], [float(r[io]) for r in rows[1:] if r]], 1)
    data = data[np.argsort(data[:, 0], kind="stable")]
    data[:, 0] -= data[0, 0]
    return data


def check_windows(trace: str, window: tuple[float, float], test_window: tuple[float, float] | None) -> None:
    """PDServing's trace fractions: each [start, end) inside [0, 1]; a test_window only on a trace
    file, and disjoint from `window` (else test episodes replay training requests)."""
    for name, part in (("window", window), ("test_window", test_window or window)):
        if not 0 <= part[0] < part[1] <= 1:
            raise ValueError(f"{name} must be [start, end) fractions with start < end, got {part}")
    if test_window is not None and trace != "file":
        raise ValueError("test_window splits a trace file (trace: file); the synthetic trace draws new "
                         "requests for every episode and has no part to hold out")
    if test_window is not None and test_window[0] < window[1] and window[0] < test_window[1]:
        raise ValueError(f"test_window {test_window} overlaps window {window}: test episodes would replay "
                         f"training requests; give disjoint fractions, e.g. window [0, 0.8], test_window [0.8, 1]")


class PDServing(VectorEnv):
    """The serving simulator (module docstring).

    Args:
        num_envs: Clusters stepped together (episodes per rollout).
        max_episode_steps: Windows per episode.
        tick: Seconds per window (one decision).
        trace: `synthetic` (the generator below) or `file` (`trace_path` or $PD_AUTOSCALE_TRACE).
        trace_path: The CSV trace (trace: file).
        window: The fraction [start, end) of the trace file training episodes are drawn from.
        test_window: The fraction test episodes are drawn from (trace: file; disjoint from
            `window`). Default: `window` (test episodes then replay training requests).
        base_rate: Mean arrivals per second (synthetic; with a file, the file's mean: the scale of
            the observation).
        amplitude: Relative amplitude of the periodic load swing.
        period: Windows per period of the swing (its phase is random per episode).
        burst_prob, burst_len, burst_size: Probability per window that a burst starts, its
            length in windows, and the rate added during it (relative to base_rate).
        prompt_mean, output_mean: Mean prompt and output tokens (lognormal, sigma `length_sigma`).
        length_drift: Per-window standard deviation of the log-mean lengths' random walk.
        prefill_rate: Prompt tokens per second of a ready prefill pod.
        decode_rate: Output tokens per second of a decode pod at full batch (1 / t1).
        decode_base_ms: The per-token time t0 of a decode pod at batch 0.
        tpot_tail: P99 / mean TPOT.
        ttft_slo_ms, tpot_slo_ms: The P99 targets.
        min_pods, max_pods: Pods per pool.
        initial_prefill, initial_decode: Ready pods at reset (default: max_pods // 2).
        startup: Windows a new pod is pending before it serves.
        masks: Hard action masks (infeasible changes; with cooldown, the cooldown).
        cooldown: Windows after a pool's change during which it cannot change again (masks on).
        slo_penalty: Reward lost per SLO violation (TTFT, TPOT) of a window.
        gpu_scale: Reward lost per GPU held per window is 1 / gpu_scale.
    """

    def __init__(self, num_envs: PositiveInt = 16, max_episode_steps: PositiveInt = 60, tick: PositiveFloat = 30.0,
                 trace: Literal["synthetic", "file"] = "synthetic", trace_path: str | None = None,
                 window: tuple[Probability, Probability] = (0.0, 1.0),
                 test_window: tuple[Probability, Probability] | None = None, base_rate: PositiveFloat = 20.0,
                 amplitude: Probability = 0.5, period: PositiveFloat = 60.0, burst_prob: Probability = 0.03,
                 burst_len: PositiveInt = 4, burst_size: NonNegativeFloat = 0.6, prompt_mean: PositiveFloat = 600.0,
                 output_mean: PositiveFloat = 250.0, length_sigma: NonNegativeFloat = 1.0,
                 length_drift: NonNegativeFloat = 0.05, prefill_rate: PositiveFloat = 8000.0,
                 decode_rate: PositiveFloat = 2500.0, decode_base_ms: PositiveFloat = 15.0,
                 tpot_tail: PositiveFloat = 1.3, ttft_slo_ms: PositiveFloat = 2000.0, tpot_slo_ms: PositiveFloat = 60.0,
                 min_pods: PositiveInt = 1, max_pods: PositiveInt = 8, initial_prefill: PositiveInt | None = None,
                 initial_decode: PositiveInt | None = None, startup: NonNegativeInt = 3, masks: bool = True,
                 cooldown: NonNegativeInt = 3, slo_penalty: NonNegativeFloat = 1.0,
                 gpu_scale: PositiveFloat = 16.0) -> None:
        if trace not in ("synthetic", "file"):
            raise ValueError(f"trace must be synthetic or file, got {trace!r}")
        if min_pods > max_pods:
            raise ValueError(f"min_pods ({min_pods}) > max_pods ({max_pods})")
        check_windows(trace, window, test_window)
        self.num_envs, self.max_episode_steps, self.tick = num_envs, max_episode_steps, tick
        self.trace, self.window = trace, tuple(window)
        self.test_window = tuple(test_window) if test_window is not None else None
        self.base_rate, self.amplitude, self.period = base_rate, amplitude, period
        self.burst_prob, self.burst_len, self.burst_size = burst_prob, burst_len, burst_size
        self.prompt_mean, self.output_mean, self.length_sigma, self.length_drift = prompt_mean, output_mean, length_sigma, length_drift
        self.prefill_rate, self.decode_rate, self.decode_base = prefill_rate, decode_rate, decode_base_ms / 1000
        self.tpot_tail, self.ttft_slo, self.tpot_slo = tpot_tail, ttft_slo_ms / 1000, tpot_slo_ms / 1000
        self.min_pods, self.max_pods, self.startup = min_pods, max_pods, startup
        self.initial = (initial_prefill or max(min_pods, max_pods // 2), initial_decode or max(min_pods, max_pods // 2))
        for n in self.initial:
            if not min_pods <= n <= max_pods:
                raise ValueError(f"initial pods {n} outside [{min_pods}, {max_pods}]")
        self.masks, self.cooldown = masks, (cooldown if masks else 0)
        self.slo_penalty, self.gpu_scale = slo_penalty, gpu_scale
        # the SLO capacity of a pool: the utilization at which its P99 latency meets the target
        p99_prompt = prompt_mean * math.exp(length_sigma * 2.326 - length_sigma ** 2 / 2)
        self.prefill_time = p99_prompt / prefill_rate
        slack = self.ttft_slo / self.prefill_time - 1
        if slack <= 0:
            raise ValueError("ttft_slo_ms is below the P99 prompt's prefill time: no load meets it")
        self.prefill_slo_util = slack / (slack + LN100)
        self.decode_slo_util = 1 - tpot_tail * self.decode_base / self.tpot_slo
        if self.decode_slo_util <= 0:
            raise ValueError("tpot_slo_ms is below tpot_tail x decode_base_ms: no load meets it")
        self.requests: np.ndarray | None = None
        if trace == "file":
            self.requests = self._read_file(trace_path)
            self.base_rate = len(self.requests) / max(self.requests[-1, 0], tick)
        self.metadata = {"autoreset_mode": AutoresetMode.DISABLED}
        self.single_observation_space = gym.spaces.Dict({
            "features": gym.spaces.Box(-np.inf, np.inf, (len(OBSERVATION),), np.float32),
            "action_mask": gym.spaces.MultiBinary(9)})
        self.single_action_space = gym.spaces.Discrete(9)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.spaces.MultiDiscrete(np.full(num_envs, 9))
        self._alloc()

    def _read_file(self, trace_path: str | None) -> np.ndarray:
        """The trace file's requests (read_trace), refused when a window holds less than an episode."""
        from components.local_assets import local_path

        path = local_path("pd_serving", "env.trace_path", trace_path, "PD_AUTOSCALE_TRACE",
                          "request trace CSV (timestamp, prompt tokens, output tokens per request)",
                          how="Export the ShareGPT-replay or Azure LLM inference trace as a CSV")
        requests = read_trace(path)
        span, episode = requests[-1, 0], self.max_episode_steps * self.tick
        for name, part in (("window", self.window), ("test_window", self.test_window or self.window)):
            if span * (part[1] - part[0]) < episode:
                raise ValueError(f"trace {path}: its {name} {part} spans {span * (part[1] - part[0]):.0f} s, "
                                 f"less than one episode ({self.max_episode_steps} x {self.tick} s)")
        return requests

    def use_test_split(self) -> None:
        """Make this env (the rollouts' test copy) draw its episodes from `test_window`."""
        if self.test_window is not None:
            self.window = self.test_window

    # --- state ---------------------------------------------------------------------------------
    def _alloc(self) -> None:
        n = self.num_envs
        z = lambda dtype=np.float64: np.zeros(n, dtype=dtype)  # noqa: E731
        self.t, self.done = z(np.int64), z(bool)
        self.ready = np.zeros((n, 2), np.int64)
        self.pending = np.zeros((n, 2, max(self.startup, 1)), np.int64)  # pods by windows left
        self.cool = np.zeros((n, 2), np.int64)
        self.backlog = np.zeros((n, 2))
        self.phase, self.burst_left, self.log_len = z(), z(np.int64), np.zeros((n, 2))
        self.offset = z()
        self.feat = np.zeros((n, len(OBSERVATION)), np.float32)
        self.ema = np.zeros((n, 2))
        self.gpu_sum, self.violations, self.events = z(), z(), z()
        self.ttft_bad, self.tpot_bad = z(), z()

    def get_state(self) -> dict[str, Any]:
        return {k: getattr(self, k).copy() for k in ("t", "done", "ready", "pending", "cool", "backlog", "phase",
                                                     "burst_left", "log_len", "offset", "feat", "ema", "gpu_sum",
                                                     "violations", "events", "ttft_bad", "tpot_bad")}

    def set_state(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v.copy())

    # --- gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._alloc()
        self.ready[:] = self.initial
        rng = self.np_random
        self.phase = rng.uniform(0, 2 * math.pi, self.num_envs)
        if self.requests is not None:
            span = self.requests[-1, 0]
            lo, hi = self.window[0] * span, self.window[1] * span - self.max_episode_steps * self.tick
            self.offset = rng.uniform(lo, max(lo, hi), self.num_envs)
        self._serve(np.zeros((self.num_envs, 2), np.int64), first=True)
        return self._obs(), {}

    def _arrivals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(requests, prompt tokens, output tokens) arriving in this window, (num_envs,) each."""
        rng, n = self.np_random, self.num_envs
        if self.requests is not None:
            start = self.offset + self.t * self.tick
            times = self.requests[:, 0]
            lo, hi = np.searchsorted(times, start), np.searchsorted(times, start + self.tick)
            csum = np.vstack([[0, 0], np.cumsum(self.requests[:, 1:], 0)])
            tokens = csum[hi] - csum[lo]
            return (hi - lo).astype(np.float64), tokens[:, 0], tokens[:, 1]
        starts = (self.burst_left == 0) & (rng.random(n) < self.burst_prob)
        self.burst_left = np.where(starts, self.burst_len, self.burst_left)
        burst = np.where(self.burst_left > 0, self.burst_size, 0.0)
        self.burst_left = np.maximum(self.burst_left - 1, 0)
        rate = self.base_rate * (1 + self.amplitude * np.sin(2 * math.pi * self.t / self.period + self.phase) + burst)
        count = rng.poisson(np.maximum(rate, 0) * self.tick).astype(np.float64)
        self.log_len = np.clip(self.log_len + self.length_drift * rng.standard_normal((n, 2)), -0.5, 0.5)
        means = np.array([self.prompt_mean, self.output_mean]) * np.exp(self.log_len)
        # the sum of `count` lognormal lengths: its mean and variance, drawn as a gamma
        s2 = self.length_sigma ** 2
        mean = count[:, None] * means
        var = count[:, None] * means ** 2 * (math.exp(s2) - 1) + 1e-9
        shape = np.where(mean > 0, mean ** 2 / var, 1.0)
        tokens = np.where(mean > 0, rng.gamma(shape, np.where(mean > 0, var / np.maximum(mean, 1e-9), 1.0)), 0.0)
        return count, tokens[:, 0], tokens[:, 1]

    def _apply_changes(self, change: np.ndarray, live: np.ndarray) -> None:
        """Start one window of the live clusters: pending pods age (those done start-up become
        ready), then each pool's change (-1, 0, +1) is applied within [min_pods, max_pods]."""
        # pods finishing their start-up become ready; the pending queue shifts by one window
        self.ready += np.where(live[:, None], self.pending[:, :, 0], 0)
        self.pending[live] = np.concatenate([self.pending[live][:, :, 1:], np.zeros((int(live.sum()), 2, 1), np.int64)], 2)
        total = self.ready + self.pending.sum(2)
        add = (change > 0) & (total < self.max_pods) & live[:, None]
        rem = (change < 0) & (total > self.min_pods) & live[:, None]
        if self.startup:
            self.pending[:, :, -1] += add
        else:
            self.ready += add
        pend = self.pending.sum(2)
        # remove a pending pod first (the newest), else a ready one (never below min_pods ready)
        has_pend = rem & (pend > 0)
        for k in range(self.pending.shape[2] - 1, -1, -1):
            take = has_pend & (self.pending[:, :, k] > 0)
            self.pending[:, :, k] -= take
            has_pend &= ~take
        rem_ready = rem & (pend == 0) & (self.ready > self.min_pods)
        self.ready -= rem_ready
        changed = add | (rem & ((pend > 0) | rem_ready))
        self.events += changed.sum(1) * live
        self.cool = np.where(changed, self.cooldown, np.maximum(self.cool - live[:, None], 0))

    def _serve(self, change: np.ndarray, first: bool = False) -> np.ndarray:
        """Apply the pools' changes, serve one window, update features; returns the SLO violations
        of the window (0, 1 or 2: P99 TTFT over target, P99 TPOT over target)."""
        live = ~self.done
        if not first:
            self._apply_changes(change, live)
        count, prompt, output = self._arrivals()
        # prefill: compute bound, backlog carried
        cap_p = self.ready[:, 0] * self.prefill_rate * self.tick
        work = prompt + self.backlog[:, 0]
        rho_p = work / np.maximum(cap_p, 1e-9)
        served = np.minimum(work, cap_p)
        backlog_p = work - served
        wait = backlog_p / (self.ready[:, 0] * self.prefill_rate)
        r = np.minimum(rho_p, 0.999)
        ttft = self.prefill_time * (1 + LN100 * r / (1 - r)) + wait
        # decode: memory bound, per-token time t0 + t1 b
        demand = (output + self.backlog[:, 1]) / self.tick  # tokens/s
        rho_d = demand / (self.ready[:, 1] * self.decode_rate)
        tpot = np.where(rho_d < 1, self.tpot_tail * self.decode_base / np.maximum(1 - rho_d, 1e-9), np.inf)
        backlog_d = np.maximum(demand - self.ready[:, 1] * self.decode_rate, 0) * self.tick
        ttft_bad, tpot_bad = ttft > self.ttft_slo, tpot > self.tpot_slo
        violated = ttft_bad | tpot_bad
        if not first:
            self.backlog = np.where(live[:, None], np.stack([backlog_p, backlog_d], 1), self.backlog)
            self.ttft_bad += ttft_bad * live
            self.tpot_bad += tpot_bad * live
            self.violations += violated * live
            self.gpu_sum += (self.ready.sum(1) + self.pending.sum((1, 2))) * live
        # features (frozen for finished envs)
        rate = count / self.tick / self.base_rate
        a_fast, a_slow = 1 - math.exp(-1 / 2), 1 - math.exp(-1 / 10)
        ema = np.stack([rate, rate], 1) if first else self.ema + np.array([a_fast, a_slow]) * (rate[:, None] - self.ema)
        prov = self.ready + self.pending.sum(2)
        f = np.zeros_like(self.feat)
        f[:, COL["rate"]] = rate
        f[:, COL["rate_fast"]], f[:, COL["rate_slow"]] = ema[:, 0], ema[:, 1]
        f[:, COL["prompt_len"]] = prompt / np.maximum(count, 1) / self.prompt_mean
        f[:, COL["output_len"]] = output / np.maximum(count, 1) / self.output_mean
        f[:, COL["prefill_util"]] = np.minimum(rho_p, 3)
        f[:, COL["decode_util"]] = np.minimum(rho_d, 3)
        f[:, COL["prefill_load"]] = np.minimum(work / (prov[:, 0] * self.prefill_rate * self.tick) / self.prefill_slo_util, 3)
        f[:, COL["decode_load"]] = np.minimum(demand / (prov[:, 1] * self.decode_rate) / self.decode_slo_util, 3)
        f[:, COL["prefill_backlog"]] = np.minimum(backlog_p / np.maximum(cap_p, 1e-9), 3)
        f[:, COL["prefill_ready"]], f[:, COL["decode_ready"]] = self.ready[:, 0] / self.max_pods, self.ready[:, 1] / self.max_pods
        pend = self.pending.sum(2)
        f[:, COL["prefill_pending"]], f[:, COL["decode_pending"]] = pend[:, 0] / self.max_pods, pend[:, 1] / self.max_pods
        cd = max(self.cooldown, 1)
        f[:, COL["prefill_cooldown"]], f[:, COL["decode_cooldown"]] = self.cool[:, 0] / cd, self.cool[:, 1] / cd
        f[:, COL["ttft"]] = np.minimum(ttft / self.ttft_slo, 3)
        f[:, COL["tpot"]] = np.minimum(tpot / self.tpot_slo, 3)
        f[:, COL["violated"]] = violated
        f[:, COL["time"]] = (self.t + (0 if first else 1)) / self.max_episode_steps
        keep = live if not first else np.ones(self.num_envs, bool)
        self.feat = np.where(keep[:, None], f, self.feat)
        self.ema = np.where(keep[:, None], ema, self.ema)
        return ttft_bad.astype(np.float64) + tpot_bad

    def action_mask(self) -> np.ndarray:
        """(num_envs, 9) bool: the allowed joint actions."""
        n = self.num_envs
        ok = np.ones((n, 2, 3), bool)  # pool x (-1, 0, +1)
        if self.masks:
            total = self.ready + self.pending.sum(2)
            ok[:, :, 2] = total < self.max_pods
            ok[:, :, 0] = (self.ready > self.min_pods) & (self.pending.sum(2) == 0)
            cool = self.cool > 0
            ok[:, :, 0] &= ~cool
            ok[:, :, 2] &= ~cool
        return (ok[:, 0, :, None] & ok[:, 1, None, :]).reshape(n, 9)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"features": self.feat.copy(), "action_mask": self.action_mask()}

    def step(self, actions: Any):
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        live = ~self.done
        if self.masks:
            allowed = self.action_mask()[np.arange(self.num_envs), actions]
            actions = np.where(allowed, actions, NOOP)  # a masked action (never drawn by the tasks) is a no-op
        change = np.stack([DELTAS[actions // 3], DELTAS[actions % 3]], 1)
        gpus_before = self.gpu_sum.copy()
        violated = self._serve(change)
        gpus = self.gpu_sum - gpus_before
        reward = np.where(live, -gpus / self.gpu_scale - self.slo_penalty * violated, 0.0)
        self.t += live
        truncated = live & (self.t >= self.max_episode_steps)
        self.done |= truncated
        return self._obs(), reward, np.zeros(self.num_envs, bool), truncated, {}

    def episode_metrics(self) -> dict[str, np.ndarray]:
        steps = np.maximum(self.t, 1)
        return {"gpus": self.gpu_sum / steps, "slo_attainment": 1 - self.violations / steps,
                "scaling_events": self.events.astype(np.float64), "ttft_violations": self.ttft_bad / steps,
                "tpot_violations": self.tpot_bad / steps}
