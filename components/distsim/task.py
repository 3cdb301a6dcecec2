"""Simulated distributed SGD as a Lightning fit: time to an epsilon-stationary point on a clock.

inkheart_m4 (abstract: ../../../shared/papers/inkheart_m4.md). Paradigm "algorithm study without
data" (DESIGN.md), as `minimax`: the data module (`oracle_steps`) yields step indices; each
training step advances the simulation by `rounds_per_step` rounds (components.distsim.simulator);
the fit stops early (trainer.should_stop) once the tuned time is known. No `model:`, `loss:` or
`optimizer:`: the problem (`distsim_problems`) is not a network and the method
(`distributed_methods`) is not a torch optimizer. Time is simulated: n workers, worker i takes
h_i seconds per stochastic gradient (`compute_time` x 1, sqrt(i) or i: `heterogeneity`), and
`kappa` seconds per coordinate sent in either direction; nothing runs on real workers.

The stepsize is tuned on the same grid for every method: `stepsizes` (multiples of 1/L) run side
by side in one batch, each with `replicates` independent runs (same problem, independent noise
and compressors); the tuned time is the smallest over the grid.

Logged at test:
- `test/time`: the tuned simulated time (seconds) to E||grad f(x)||^2 <= epsilon (the mean over
  replicates at a log-spaced checkpoint grid, `checkpoints_per_decade`), `time_budget` when no
  stepsize reached it; `test/log_time` its natural log; `test/reached` 1 or 0;
- `test/best_index`, `test/best_stepsize`, `test/grid_size`: the tuned stepsize (the claims read
  `interior_grid(column(run, 'test/best_index'), grid_size)`: a best at the grid's edge is
  undecided, the claim inconclusive);
- `test/rounds`: rounds simulated; `test/round_seconds`: the mean simulated seconds per round of
  the tuned stepsize's rows; `test/workers`: n.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import torch

from components.distsim.simulator import Cluster, Simulation, compute_times
from components.kinds import Kind
from components.tasks.loop import PlainLoop
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt

Problem = Annotated[Any, Kind("distsim_problems")]
Method = Annotated[Any, Kind("distributed_methods")]


class DistributedTime(PlainLoop):
    """Runs a distributed method on a simulated cluster and logs the simulated time to an
    epsilon-stationary point, tuned over a stepsize grid (module docstring).

    Args:
        problem: The problem: grad, noisy_grad, start, smoothness (components.distsim.problems).
        method: The method: reset(sim, x), round(sim, x) -> (direction, seconds).
        workers: n.
        compute_time: h, seconds per stochastic gradient of the fastest worker.
        heterogeneity: h_i = h (homogeneous), h sqrt(i) or h i.
        kappa: Seconds per coordinate sent, server to worker or worker to server.
        epsilon: The target E||grad f||^2.
        stepsizes: The grid, in multiples of 1/L (the same for every method).
        replicates: Independent runs per stepsize (the expectation is their mean).
        time_budget: The simulated seconds every method gets (equal budgets).
        checkpoints_per_decade: Density of the time grid on which the mean is read (4 decades
            below the budget).
        rounds_per_step: Rounds simulated per training step.
    """

    def __init__(
        self,
        problem: Problem,
        method: Method,
        workers: PositiveInt = 1,
        compute_time: PositiveFloat = 1.0,
        heterogeneity: Literal["homogeneous", "sqrt", "linear"] = "homogeneous",
        kappa: NonNegativeFloat = 0.5,
        epsilon: PositiveFloat = 0.02,
        stepsizes: list[PositiveFloat] | None = None,
        replicates: PositiveInt = 4,
        time_budget: PositiveFloat = 30000.0,
        checkpoints_per_decade: PositiveInt = 40,
        rounds_per_step: PositiveInt = 25,
    ) -> None:
        super().__init__()
        for m in ("grad", "noisy_grad", "start"):
            if not callable(getattr(problem, m, None)):
                raise TypeError(f"problem must be a distsim problem, got {type(problem).__name__} without {m}")
        for m in ("reset", "round"):
            if not callable(getattr(method, m, None)):
                raise TypeError(f"method must be a distributed method, got {type(method).__name__} without {m}")
        stepsizes = list(stepsizes or [1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0])
        if sorted(stepsizes) != stepsizes or len(set(stepsizes)) != len(stepsizes):
            raise ValueError(f"stepsizes must be increasing and distinct, got {stepsizes}")
        self.problem, self.method = problem, method
        self.workers, self.compute_time, self.heterogeneity = workers, compute_time, heterogeneity
        self.kappa, self.epsilon, self.stepsizes = kappa, epsilon, stepsizes
        self.replicates, self.time_budget = replicates, time_budget
        self.per_decade, self.rounds_per_step = checkpoints_per_decade, rounds_per_step
        compute_times(1, compute_time, heterogeneity)  # fails early on a wrong heterogeneity
        self.register_buffer("clock", torch.zeros(1, dtype=torch.float64))
        self.sim: Simulation | None = None

    def loop_tensors(self) -> list[torch.Tensor]:
        return [self.clock]

    def _start(self) -> None:
        # A private noise stream seeded from the global RNG (seeded by the runner with `seed`).
        seed = int(torch.randint(0, 2**62, (1,)).item())
        generator = torch.Generator().manual_seed(seed)
        cluster = Cluster(self.problem, self.workers, compute_times(self.workers, self.compute_time, self.heterogeneity),
                          self.kappa, generator)
        self.sim = Simulation(self.problem, self.method, cluster, self.stepsizes, self.replicates, self.epsilon,
                              self.time_budget, per_decade=self.per_decade)

    def on_fit_start(self) -> None:
        if self.sim is None:
            self._start()

    def advance(self, batch: torch.Tensor, t: int) -> None:
        sim = self.sim
        for _ in range(self.rounds_per_step):
            if sim.done():
                break
            sim.step()
        self.clock.fill_(float(sim.clock.min()))
        if sim.done():
            self.trainer.should_stop = True

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        if self.sim is None:
            self._start()
        sim = self.sim
        index, time = sim.best()
        reached = index is not None
        if not reached:
            curves = sim.curves()
            last = torch.nan_to_num(curves, nan=float("inf")).min(1).values
            index, time = int(torch.argmin(last)), self.time_budget
        rows = slice(index * sim.R, (index + 1) * sim.R)
        values = {
            "test/time": float(time), "test/log_time": float(torch.log(torch.tensor(float(time)))),
            "test/reached": float(reached), "test/best_index": float(index),
            "test/best_stepsize": float(self.stepsizes[index]), "test/grid_size": float(len(self.stepsizes)),
            "test/rounds": float(sim.rounds), "test/round_seconds": float(sim.clock[rows].mean()) / max(sim.rounds, 1),
            "test/workers": float(self.workers),
        }
        for key, value in values.items():
            self.log(key, value, batch_size=1)
