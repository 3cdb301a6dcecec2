"""Stochastic minimax optimization as a Lightning fit: a game, an algorithm, T iterations.

Paradigm "algorithm study without data" (DESIGN.md): the data module (`oracle_steps`) only yields
T step indices; each training step makes one iteration of a minimax algorithm (the nested
`algorithm:` node, table `minimax_algorithms`) on a game (the nested `problem:` node, table
`problems`, which draws its own noisy gradients). The spec has no `model:`, `loss:` or
`optimizer:` section: the game is not a network and the algorithm is not a torch optimizer.
Manual optimization; the iterates (x, y) are float64 buffers of shape (replicates, dim).

Logged keys:
- `train/gap`, `train/step_size`, `train/regularization`: the mean primal-dual gap of the last
  iterate over the replicates and the algorithm's schedules, at log-spaced iterations t (about
  `log_points_per_decade` per decade) and at t = T, with the iteration t as the MLflow step.
- `test/gap` (mean over replicates), `test/gap_std` (their standard deviation), `test/iterations`,
  `test/oracle_calls`, and `test/gap_slope`: the least-squares slope of log(train/gap) against
  log(t) over the last `slope_window` of the horizon on a log scale (t >= T^(1 - slope_window);
  0.5 fits from sqrt(T) to T), the within-run estimate of the last-iterate rate (-1/4 for the
  perturbed methods of perturbed_eg, about 0 for a method stuck at a noise floor).
- With `horizons: [T_1, ..., T_k]` (a fixed-horizon study in one process, as the paper's rate is
  stated: the final gap after T iterations of a method whose schedules are set for that T):
  `test/gap_T<T_i>` and `test/gap_std_T<T_i>`, the mean and spread over `replicates` runs of
  horizon T_i, and `test/horizon_slope`, the least-squares slope of log(test/gap_T<T_i>) against
  log(T_i). The runs of horizon T_i < T are extra (a copy of the algorithm each, reset with
  T_i, its own random starts, the same noise stream); T_i = T is the main run itself.
"""

from __future__ import annotations

import copy
import warnings
from typing import Annotated, Any, Literal

import torch
from annotated_types import Interval

from components.kinds import Kind
from components.tasks.loop import PlainLoop, log_log_slope, log_points
from components.types import PositiveInt

# Nested nodes: a game from the `problems` table (contract: components.minimax.games) and an
# algorithm from the `minimax_algorithms` table (contract: components.minimax.algorithms).
Problem = Annotated[Any, Kind("problems")]
MinimaxAlgorithm = Annotated[Any, Kind("minimax_algorithms")]

_GAME_METHODS = ("grad", "gap", "project_x", "project_y", "center", "sample")


class Minimax(PlainLoop):
    """Runs a stochastic minimax algorithm on a game for T iterations (one per training batch)
    and logs the exact primal-dual gap of the last iterate (perturbed_eg's metric).

    Args:
        problem: The game: grad (noisy oracle), project_x/project_y, gap, center, sample.
        algorithm: The algorithm node: reset(problem, x, y, horizon) then step(problem, x, y, t,
            generator) -> (x, y) per iteration.
        replicates: Independent runs in parallel (same game and start distribution, independent
            noise); the gap logged is their mean, an estimate of the expected gap of the theory.
        init: Start at a random feasible point per replicate ("random", drawn from the run seed)
            or at the center of the constraint sets ("center").
        log_points_per_decade: Density of the log-spaced iterations at which the gap is logged.
        slope_window: Share of the horizon, on a log scale, over which `test/gap_slope` is fitted.
        horizons: Horizons T_i of a fixed-horizon study (module docstring), each <= the run's
            horizon T; a horizon the run does not reach (a shortened run) is left out, with a
            warning. Empty: the main run only.
    """

    def __init__(
        self,
        problem: Problem,
        algorithm: MinimaxAlgorithm,
        replicates: PositiveInt = 1,
        init: Literal["random", "center"] = "random",
        log_points_per_decade: PositiveInt = 10,
        slope_window: Annotated[float, Interval(gt=0, le=1)] = 0.5,
        horizons: list[PositiveInt] | None = None,
    ) -> None:
        super().__init__()
        missing = [m for m in _GAME_METHODS if not callable(getattr(problem, m, None))]
        if missing:
            raise TypeError(f"problem must be a game (a registered problem), got {type(problem).__name__} "
                            f"without {', '.join(missing)}")
        for m in ("reset", "step", "step_size", "regularization"):
            if not callable(getattr(algorithm, m, None)):
                raise TypeError(f"algorithm must be a minimax algorithm (components.minimax.algorithms), "
                                f"got {type(algorithm).__name__} without {m}")
        if init not in ("random", "center"):
            raise ValueError(f"init must be 'random' or 'center', got {init!r}")
        horizons = list(horizons or [])
        if len(set(horizons)) != len(horizons):
            raise ValueError(f"horizons must be distinct iteration counts, got {horizons}")
        self.problem, self.algorithm = problem, algorithm
        self.replicates, self.init = replicates, init
        self.per_decade, self.slope_window = log_points_per_decade, slope_window
        self.register_buffer("x", torch.zeros(replicates, problem.dim_x, dtype=torch.float64))
        self.register_buffer("y", torch.zeros(replicates, problem.dim_y, dtype=torch.float64))
        # The fixed-horizon study: one (replicates, dim) slab per horizon, its own algorithm copy.
        self.horizons = sorted(horizons)
        self.register_buffer("x_horizons", torch.zeros(len(horizons), replicates, problem.dim_x, dtype=torch.float64))
        self.register_buffer("y_horizons", torch.zeros(len(horizons), replicates, problem.dim_y, dtype=torch.float64))
        self.horizon_algorithms: dict[int, Any] = {}
        self.final_gaps: dict[int, torch.Tensor] = {}
        self.started = False
        self.horizon = self.iterations = 0
        self.points: set[int] = set()
        self.history: tuple[list[int], list[float]] = ([], [])
        self.generator: torch.Generator | None = None

    # --- setup -------------------------------------------------------------------------------
    def _start(self, horizon: int) -> None:
        # A private noise stream seeded from the global RNG (which the runner seeds with the spec's
        # `seed`): reproducible, and independent of anything else that draws random numbers.
        seed = int(torch.randint(0, 2**62, (1,)).item())
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        if self.init == "random":
            x, y = self.problem.sample((self.replicates,), self.generator)
        else:
            cx, cy = self.problem.center()
            x, y = cx.expand(self.replicates, -1), cy.expand(self.replicates, -1)
        self.x.copy_(x)
        self.y.copy_(y)
        self.horizon = max(int(horizon), 1)
        self.points = set(log_points(self.horizon, self.per_decade))
        self.history = ([], [])
        self.iterations = 0
        self.algorithm.reset(self.problem, self.x.clone(), self.y.clone(), self.horizon)
        self._start_horizons()
        self.started = True

    def _start_horizons(self) -> None:
        """The extra runs of the fixed-horizon study: horizons below the main run's."""
        self.horizon_algorithms, self.final_gaps = {}, {}
        beyond = [h for h in self.horizons if h > self.horizon]
        if beyond:
            warnings.warn(f"horizons {beyond} are longer than the run ({self.horizon} iterations): left out",
                          stacklevel=2)
        for i, h in enumerate(self.horizons):
            if h >= self.horizon:
                continue
            if self.init == "random":
                x, y = self.problem.sample((self.replicates,), self.generator)
            else:
                x, y = self.x, self.y
            self.x_horizons[i].copy_(x)
            self.y_horizons[i].copy_(y)
            algorithm = copy.deepcopy(self.algorithm)
            algorithm.reset(self.problem, x.clone(), y.clone(), h)
            self.horizon_algorithms[i] = algorithm

    def on_fit_start(self) -> None:
        if not self.started:
            self._start(self.trainer.estimated_stepping_batches)

    def loop_tensors(self) -> list[torch.Tensor]:
        return [self.x, self.y]

    # --- steps -------------------------------------------------------------------------------
    def gap(self) -> torch.Tensor:
        """The primal-dual gap of the current iterate, per replicate."""
        return self.problem.gap(self.x, self.y)

    def advance(self, batch: torch.Tensor, t: int) -> None:
        """One iteration of the algorithm (t = iterations completed so far), and of each horizon run."""
        x, y = self.algorithm.step(self.problem, self.x, self.y, t, self.generator)
        self.x.copy_(x)
        self.y.copy_(y)
        for i, algorithm in self.horizon_algorithms.items():
            h = self.horizons[i]
            if t < h:
                x, y = algorithm.step(self.problem, self.x_horizons[i], self.y_horizons[i], t, self.generator)
                self.x_horizons[i].copy_(x)
                self.y_horizons[i].copy_(y)
                if t + 1 == h:
                    self.final_gaps[h] = self.problem.gap(x, y)
        self.iterations = t + 1

    def step_size(self, t: int) -> float:
        return self.algorithm.step_size(t)

    def after_advance(self, done: int) -> None:
        t = done - 1
        if done in self.points or done == self.horizon:
            gap = float(self.gap().mean())
            self.history[0].append(done)
            self.history[1].append(gap)
            values = {"train/gap": gap, "train/step_size": self.algorithm.step_size(t),
                      "train/regularization": self.algorithm.regularization(t)}
            # Straight to the loggers: the MLflow step is the iteration count at log-spaced points,
            # which self.log's every-n-steps schedule cannot express.
            for logger in self.loggers:
                logger.log_metrics(values, step=done)

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        if not self.started:
            self._start(1)
        gaps = self.gap()
        iterations = self.iterations
        self.log("test/gap", gaps.mean(), batch_size=1)
        self.log("test/gap_std", gaps.std(unbiased=False), batch_size=1)
        self.log("test/iterations", float(iterations), batch_size=1)
        self.log("test/oracle_calls", float(iterations * self.algorithm.oracle_calls_per_step), batch_size=1)
        slope = log_log_slope(*self.history, window=self.slope_window)
        if slope is not None:
            self.log("test/gap_slope", slope, batch_size=1)
        finals = dict(self.final_gaps)
        if self.horizon in self.horizons and iterations == self.horizon:
            finals[self.horizon] = gaps
        for h in sorted(finals):
            self.log(f"test/gap_T{h}", finals[h].mean(), batch_size=1)
            self.log(f"test/gap_std_T{h}", finals[h].std(unbiased=False), batch_size=1)
        if len(finals) >= 2:
            ts = sorted(finals)
            slope = log_log_slope(ts, [float(finals[h].mean()) for h in ts], window=1.0)
            if slope is not None:
                self.log("test/horizon_slope", slope, batch_size=1)
