"""`reach_sessions`: simulated multi-session center-out reaches with a known latent dynamics, in
paired (neural + behaviour) and unpaired (behaviour only) pools, mixed by a ratio (beemo).

Behaviour. A trial reaches one of `targets` directions theta_k = 2 pi k / K. Its velocity follows a
minimum-jerk speed profile s(tau) = 30 tau^2 (1 - tau)^2 (peak scaled to 1) over `duration` bins
from an onset bin (both jittered per trial), while its direction turns by a target-specific
curvature: theta(t) = theta_k + c_k (2 tau - 1), c_k = +-`curvature` alternating over the targets
(curved paths, so a behaviour prior has structure to learn beyond "move straight"). Plus Gaussian
noise `behavior_noise`; every trial lasts `steps` bins; velocity (n, steps, 2).

Neural activity. Session s has units[s] units with uniform random preferred directions d_u,
baselines b_u ~ U(`rate_low`, `rate_high`) counts per bin and gains g_u ~ U(0.5, 1.5) x `gain`;
counts are Poisson(b_u exp(g_u v_t . d_u)) (log-linear cosine tuning), so sessions differ in unit
count and tuning while sharing the behaviour's dynamics.

Pools (one generator seeded by `seed` draws the tuning, trials and spikes):
- paired: `paired_trials` trials of each session in `paired_sessions` (behaviour and spikes);
- unpaired: `unpaired_trials` behaviour-only trajectories; `unpaired_dynamics: shuffled` permutes
  each trajectory's bins in time (the same velocities, no dynamics: the mismatched-dynamics control);
- val / test: `val_trials` / `test_trials` held-out paired trials of session `eval_session`.

Training batches (`MixedBatches`, components/data/mixture.py): `iterations` steps; steps below
`pretrain_steps` draw unpaired batches (behaviour-only pretraining), later ones are paired with
probability `paired_fraction` (the mixture ratio), each batch `batch_size` trials drawn with
replacement from its pool by a generator seeded by (seed, step). A paired batch is {"behavior"
(B, T, 2), "spikes" (B, T, max_units) with zeros past a session's units, "session" (B,)}; an
unpaired one is {"behavior"} alone. `split(name)` gives a whole held-out split as a paired batch.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from components.neural_decoding.pools import PairedUnpairedPools
from components.types import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Probability


def reach_velocities(n: int, gen: torch.Generator, targets: int, steps: int, curvature: float,
                     duration: tuple[int, int], onset: tuple[int, int], noise: float) -> torch.Tensor:
    """Velocities (n, steps, 2) of curved minimum-jerk reaches (module docstring)."""
    k = torch.randint(targets, (n,), generator=gen)
    start = torch.randint(onset[0], onset[1] + 1, (n, 1), generator=gen).float()
    length = torch.randint(duration[0], duration[1] + 1, (n, 1), generator=gen).float()
    tau = ((torch.arange(steps).float()[None] - start) / length).clamp(0, 1)
    speed = 30 * tau ** 2 * (1 - tau) ** 2 / 1.875
    sign = 1.0 - 2.0 * (k % 2).float()
    theta = (2 * math.pi * k.float() / targets)[:, None] + (curvature * sign)[:, None] * (2 * tau - 1)
    velocity = speed[..., None] * torch.stack([theta.cos(), theta.sin()], dim=-1)
    return velocity + noise * torch.randn(velocity.shape, generator=gen)


def poisson_spikes(velocity: torch.Tensor, tuning: dict[str, torch.Tensor], gen: torch.Generator) -> torch.Tensor:
    """Counts (n, steps, units) of log-linear cosine-tuned Poisson units."""
    drive = velocity @ tuning["directions"].T  # (n, steps, units)
    rate = tuning["baseline"] * torch.exp(tuning["gain"] * drive)
    return torch.poisson(rate, generator=gen)


class ReachSessions(PairedUnpairedPools):
    """Simulated multi-session reaches, paired and unpaired pools, mixed by a ratio (module docstring).

    Args:
        units: Units per session (one entry per session).
        paired_sessions: Sessions whose trials form the paired training pool.
        eval_session: The session of the val and test trials.
        paired_trials: Paired training trials per paired session (the low-paired-data regime).
        unpaired_trials: Behaviour-only training trajectories.
        unpaired_dynamics: `matched` (the same reaches) or `shuffled` (bins permuted in time: the control).
        val_trials: Held-out val trials (learning-rate selection).
        test_trials: Held-out test trials.
        targets: Reach directions K.
        steps: Bins per trial.
        curvature: Half the turn (rad) of a reach's direction over its course.
        duration: [min, max] bins of a reach.
        onset: [min, max] bin of the movement onset.
        behavior_noise: Standard deviation of the velocity noise.
        rate_low: Lowest baseline count per bin.
        rate_high: Highest baseline count per bin.
        gain: Scale of the units' velocity gains.
        paired_fraction: Probability that a step after pretraining draws a paired batch.
        pretrain_steps: First steps drawn from the unpaired pool only (behaviour-only pretraining).
        iterations: Training steps.
        batch_size: Trials per training step.
        seed: Seeds the simulation and the batches (write `${seed}`).
    """

    def __init__(self, units: list[PositiveInt] = [48, 40, 56], paired_sessions: list[NonNegativeInt] = [0],
                 eval_session: NonNegativeInt = 0, paired_trials: PositiveInt = 40,
                 unpaired_trials: NonNegativeInt = 2000,
                 unpaired_dynamics: Literal["matched", "shuffled"] = "matched", val_trials: PositiveInt = 100,
                 test_trials: PositiveInt = 200, targets: PositiveInt = 8, steps: PositiveInt = 24,
                 curvature: NonNegativeFloat = 0.8, duration: list[PositiveInt] = [12, 16],
                 onset: list[NonNegativeInt] = [2, 6], behavior_noise: NonNegativeFloat = 0.03,
                 rate_low: PositiveFloat = 0.2, rate_high: PositiveFloat = 1.0, gain: PositiveFloat = 1.0,
                 paired_fraction: Probability = 1.0, pretrain_steps: NonNegativeInt = 0,
                 iterations: PositiveInt = 400, batch_size: PositiveInt = 32, seed: NonNegativeInt = 0) -> None:
        super().__init__(paired_fraction, pretrain_steps, iterations, batch_size, seed)
        if unpaired_dynamics not in ("matched", "shuffled"):
            raise ValueError(f"unpaired_dynamics must be matched or shuffled, got {unpaired_dynamics!r}")
        if any(s >= len(units) for s in [*paired_sessions, eval_session]):
            raise ValueError(f"sessions must index units (of length {len(units)}), got {paired_sessions}, {eval_session}")
        if onset[1] + duration[1] > steps:
            raise ValueError(f"a reach (onset {onset[1]} + duration {duration[1]}) must fit in steps={steps}")
        if unpaired_trials == 0 and (paired_fraction < 1 or pretrain_steps > 0):
            raise ValueError("unpaired batches (paired_fraction < 1 or pretrain_steps > 0) need unpaired_trials > 0")
        self.units, self.paired_sessions, self.eval_session = list(units), list(paired_sessions), eval_session
        self.paired_trials, self.unpaired_trials, self.unpaired_dynamics = paired_trials, unpaired_trials, unpaired_dynamics
        self.val_trials, self.test_trials = val_trials, test_trials
        self.reach = dict(targets=targets, steps=steps, curvature=curvature, duration=tuple(duration),
                          onset=tuple(onset), noise=behavior_noise)
        self.rates, self.gain = (rate_low, rate_high), gain

    def info(self) -> dict[str, int]:
        return {"sessions": len(self.units), "max_units": max(self.units), "steps": self.reach["steps"]}

    def _tuning(self, gen: torch.Generator) -> list[dict[str, torch.Tensor]]:
        tunings = []
        for n in self.units:
            angle = 2 * math.pi * torch.rand(n, generator=gen)
            low, high = self.rates
            tunings.append({"directions": torch.stack([angle.cos(), angle.sin()], 1),
                            "baseline": low + (high - low) * torch.rand(n, generator=gen),
                            "gain": self.gain * (0.5 + torch.rand(n, generator=gen))})
        return tunings

    def _paired(self, sessions: list[int], trials: int, tunings: list, gen: torch.Generator) -> dict[str, torch.Tensor]:
        parts = {"behavior": [], "spikes": [], "session": []}
        for s in sessions:
            velocity = reach_velocities(trials, gen, **self.reach)
            spikes = torch.zeros(trials, self.reach["steps"], max(self.units))
            spikes[..., :self.units[s]] = poisson_spikes(velocity, tunings[s], gen)
            parts["behavior"].append(velocity)
            parts["spikes"].append(spikes)
            parts["session"].append(torch.full((trials,), s, dtype=torch.long))
        return {k: torch.cat(v) for k, v in parts.items()}

    def setup(self, stage: str | None = None) -> None:
        if self.pools:
            return
        gen = torch.Generator().manual_seed(self.seed)
        tunings = self._tuning(gen)
        self.pools["paired"] = self._paired(self.paired_sessions, self.paired_trials, tunings, gen)
        self.pools["val"] = self._paired([self.eval_session], self.val_trials, tunings, gen)
        self.pools["test"] = self._paired([self.eval_session], self.test_trials, tunings, gen)
        behavior = reach_velocities(self.unpaired_trials, gen, **self.reach)
        if self.unpaired_dynamics == "shuffled":
            order = torch.argsort(torch.rand(behavior.shape[:2], generator=gen), dim=1)
            behavior = torch.gather(behavior, 1, order[..., None].expand_as(behavior))
        self.pools["unpaired"] = {"behavior": behavior}
