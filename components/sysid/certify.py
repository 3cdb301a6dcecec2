"""Counterexample-guided barrier synthesis for a black-box monotone system (monotone_barrier).

Each training batch of the data (`oracle_steps`: one index per round) is one round of the loop

    train the Max-Monotone barrier B (Adam, `steps` steps) -> verify B by cells -> refine,

stopping at the first round whose verification succeeds (later rounds do nothing). The learner
sees the system only through simulator queries x -> f(x), every one counted, all against one
budget `max_queries`:
- at the start, `trajectory` states of the trajectory from the initial set's upper corner a 1
  (by monotonicity it bounds every trajectory from X0 from above) and `samples` states drawn
  uniformly in [0, u]^n (below the unsafe threshold);
- per round, the verifier's queries (components/sysid/monotone.py's docstring has the argument):
  `verifier: cells` queries the upper corner of the maximal cell of S = {B <= 0} only (one query),
  `verifier: dense_grid` (the baseline) the upper corner of every grid cell that can meet S, on
  the same grid (`cells_per_axis`), by the same corner argument; a round whose queries would pass
  the budget stops the run uncertified (`test/budget_exceeded` = 1, the queries it would need in
  `test/n_queries_needed`).
- refinement: every failing corner (l, h, f(h)) joins the training data; the loss asks its image
  f(h) to enter S (with a margin).

Training loss (margin eps; B = max_i psi_i): sum_i relu(psi_i(a) + eps) [init: B(a 1) <= -eps]
+ sum_i relu(eps - psi_i(u)) [unsafe: B(u e_i) >= psi_i(u) >= eps] + the mean over the queried
pairs (x, f(x)) of min(relu(eps - B(x)), sum_i relu(psi_i(f(x)_i) + eps)) [inductive: x leaves S
or f(x) enters it] + the mean over failed corners of sum_i relu(psi_i(f(h)_i) + eps).

Logged at test: `test/certified` (1 when the last verification passed every condition, the
structural monotonicity check included), `test/n_queries` (simulator queries spent, training
data and verification; `test/verify_queries` the verification's share), `test/n_queries_needed`
(the same, plus for a run stopped by the budget the verification it could not afford; capped at
1e300, `test/log10_queries_needed` exact), `test/budget_exceeded`, `test/rounds`,
`test/monotone_ok`, `test/corner_check_ok` (the cell check of the last round, read as if B were
monotone), `test/init_ok`, `test/unsafe_ok`, `test/level_mean` (the mean over axes of the
maximal cell's lower corner), `test/dim`, and an audit that is not part of the method:
`test/audit_violations` among the audit's random states (2 x `audit_samples` states in S's
cover box and the domain whose image must stay in S when they are in S, `audit_samples` initial
and `audit_samples` unsafe states; its `test/audit_queries` are not counted in n_queries).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
import torch

from components.kinds import Kind
from components.sysid.monotone import MaxMonotone, cover_cell, dense_cells
from components.tasks.loop import PlainLoop
from components.types import NonNegativeInt, PositiveFloat, PositiveInt

MonotoneSystem = Annotated[Any, Kind("monotone_systems")]


class BarrierSynthesis(PlainLoop):
    """Train / verify / refine a Max-Monotone barrier of a monotone system from simulator queries
    (module docstring), one round per training batch.

    Args:
        system: The simulator (`monotone_systems` kind): step(x), dim, high, init_high, unsafe_low.
        hidden: Hidden units of each per-coordinate piece of the network.
        monotone: Non-negative weights through softplus (the method); False: the same network with
            unconstrained weights (the control).
        verifier: `cells` (the maximal boundary cell, one query) or `dense_grid` (every cell that
            can meet S), on the same grid.
        cells_per_axis: Cells per axis of the partition (resolution U / cells_per_axis).
        max_queries: The simulator-query budget of the whole run (the same for every verifier).
        steps: Adam steps per round (the first round and each refinement); 0: the untrained
            network (the floor).
        lr: Adam's learning rate.
        margin: eps of the loss.
        samples: Random states queried at the start.
        trajectory: Steps of the trajectory from a 1 queried at the start.
        audit_samples: States of the independent audit at test (not counted).
    """

    def __init__(
        self,
        system: MonotoneSystem,
        hidden: PositiveInt = 8,
        monotone: bool = True,
        verifier: Literal["cells", "dense_grid"] = "cells",
        cells_per_axis: PositiveInt = 128,
        max_queries: PositiveInt = 20000,
        steps: NonNegativeInt = 200,
        lr: PositiveFloat = 0.05,
        margin: PositiveFloat = 0.02,
        samples: NonNegativeInt = 64,
        trajectory: NonNegativeInt = 30,
        audit_samples: NonNegativeInt = 4096,
    ) -> None:
        super().__init__()
        missing = [m for m in ("step", "dim", "high", "init_high", "unsafe_low") if not hasattr(system, m)]
        if missing:
            raise TypeError(f"system must be a monotone system (components.sysid.monotone), got "
                            f"{type(system).__name__} without {', '.join(missing)}")
        if verifier not in ("cells", "dense_grid"):
            raise ValueError(f"verifier must be 'cells' or 'dense_grid', got {verifier!r}")
        self.system, self.verifier = system, verifier
        self.hidden, self.monotone = hidden, monotone
        self.cells, self.max_queries = cells_per_axis, max_queries
        self.steps, self.lr, self.margin = steps, lr, margin
        self.samples, self.trajectory, self.audit_samples = samples, trajectory, audit_samples
        self.register_buffer("rounds", torch.zeros((), dtype=torch.long))
        self.net: MaxMonotone | None = None
        self.started = self.done = False
        self.result: dict[str, float] = {}

    # --- queries -----------------------------------------------------------------------------
    def _query(self, x: np.ndarray) -> np.ndarray:
        self.queries += len(x)
        return self.system.step(x)

    def _start(self) -> None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
        self.generator = torch.Generator().manual_seed(seed)
        self.rng = np.random.default_rng(seed)
        s = self.system
        self.net = MaxMonotone(s.dim, self.hidden, s.high, self.monotone, self.generator)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=self.lr)
        self.queries, self.needed = 0, 0
        xs = [np.full((1, s.dim), s.init_high)]
        for _ in range(max(self.trajectory - 1, 0)):
            xs.append(s.step(xs[-1]))  # counted below, with the rest
        states = np.concatenate(xs[: self.trajectory] + [self.rng.uniform(0, s.unsafe_low, (self.samples, s.dim))])
        if len(states) > self.max_queries:
            raise ValueError(f"max_queries {self.max_queries} is below the initial data ({len(states)} queries)")
        self.pairs = (states, self._query(states))
        self.cex = (np.zeros((0, s.dim)), np.zeros((0, s.dim)))
        self.needed = self.initial = self.queries
        self.budget_exceeded = False
        self.started = True

    def on_fit_start(self) -> None:
        if not self.started:
            self._start()

    def loop_tensors(self) -> list[torch.Tensor]:
        return [self.rounds]

    # --- one round ---------------------------------------------------------------------------
    def _loss(self) -> torch.Tensor:
        """The loss of the module docstring. B = max_i psi_i, so B(z) + eps <= 0 is asked of every
        piece: relu(B(z) + eps) is replaced by its upper bound sum_i relu(psi_i(z_i) + eps), which
        moves every offending piece at once (the max alone moves one piece per step); likewise the
        unsafe condition B(u e_i) > eps is asked of piece i, psi_i(u) > eps (sufficient)."""
        s, net, eps = self.system, self.net, self.margin
        t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
        relu = torch.relu
        above = lambda z: relu(net.pieces(t(z)) + eps).sum(-1)  # noqa: E731  (0 iff B(z) <= -eps)
        loss = above(np.full((1, s.dim), s.init_high)).sum()
        # B(u e_i) >= psi_i(u): asked of piece i itself (another piece's value at 0 would satisfy
        # B(u e_i) > 0 only by breaking the init condition)
        loss = loss + relu(eps - net.pieces(t(np.full((1, s.dim), s.unsafe_low)))).sum()
        x, y = self.pairs
        if len(x):
            loss = loss + torch.minimum(relu(eps - net(t(x))), above(y)).mean()
        if len(self.cex[0]):  # a failed corner: its image must enter S
            loss = loss + above(self.cex[1]).mean()
        return loss

    def _train(self) -> None:
        with torch.enable_grad():
            for _ in range(self.steps):
                self.optimizer.zero_grad()
                loss = self._loss()
                if loss.item() == 0:
                    break
                loss.backward()
                self.optimizer.step()

    def _verify(self) -> dict[str, float]:
        """The checks of components/sysid/monotone.py's docstring (a dense grid the budget cannot
        pay for sets `budget_exceeded` and fails the inductive check unqueried)."""
        s, net = self.system, self.net
        with torch.no_grad():
            b_init = float(net(torch.full((1, s.dim), s.init_high, dtype=torch.float64)))
            b_unsafe = net(torch.as_tensor(s.unsafe_low * np.eye(s.dim)))
        out = {"monotone_ok": float(net.is_monotone()), "init_ok": float(b_init <= 0),
               "unsafe_ok": float((b_unsafe > 0).all())}
        cell = cover_cell(net, self.cells)
        if cell is None:  # S is empty: the init check has failed already
            out["corner_check_ok"] = 0.0
            return out
        lower, upper, k = cell
        step = s.high / self.cells
        if self.verifier == "cells":
            corners_low, corners_up = lower[None], upper[None]
        else:
            count, mesh = dense_cells(k, self.cells, self.max_queries - self.queries)
            if mesh is None:  # the budget cannot pay for this verification: the run stops here
                self.needed = self.queries + count
                self.budget_exceeded = True
                out["corner_check_ok"] = 0.0
                return out
            corners_up = np.minimum(mesh * step, s.high)
            corners_low = corners_up - step
        images = self._query(corners_up)
        self.needed = self.queries
        with torch.no_grad():
            fails = (net(torch.as_tensor(images)) > 0).numpy()
        out["corner_check_ok"] = float(not fails.any())
        if fails.any():
            self.cex = (np.concatenate([self.cex[0], corners_low[fails]]),
                        np.concatenate([self.cex[1], images[fails]]))
        return out

    def advance(self, batch: Any, t: int) -> None:
        if self.done:
            return
        self._train()
        self.rounds += 1
        checks = self._verify()
        self.result = checks
        ok = all(checks[key] == 1.0 for key in ("monotone_ok", "init_ok", "unsafe_ok", "corner_check_ok"))
        self.result["certified"] = float(ok)
        if self.budget_exceeded or all(checks[key] == 1.0 for key in ("corner_check_ok", "init_ok", "unsafe_ok")):
            self.done = True  # out of budget, or a candidate the cell check accepts (certified or not)

    # --- the report --------------------------------------------------------------------------
    def _audit(self) -> float:
        """Violations among random states (module docstring); not counted as queries."""
        if not self.audit_samples:
            return 0.0
        s, net, rng = self.system, self.net, self.rng
        m = self.audit_samples
        cell = cover_cell(net, self.cells)
        top = cell[1] if cell is not None else np.full(s.dim, s.high)
        x = np.concatenate([rng.uniform(0, 1, (m, s.dim)) * top, rng.uniform(0, s.high, (m, s.dim))])
        x0 = rng.uniform(0, s.init_high, (m, s.dim))
        xu = rng.uniform(0, s.high, (m, s.dim))
        xu[np.arange(m), rng.integers(0, s.dim, m)] = rng.uniform(s.unsafe_low, s.high, m)
        with torch.no_grad():
            b = lambda a: net(torch.as_tensor(a)).numpy()  # noqa: E731
            inside = b(x) <= 0
            bad = int((inside & (b(s.step(x)) > 0)).sum()) + int((b(x0) > 0).sum()) + int((b(xu) <= 0).sum())
        self.audit_queries = len(x)
        return float(bad)

    def metrics(self) -> dict[str, float]:
        if not self.started:
            self._start()
        out = {key: float(self.result.get(key, 0.0)) for key in
               ("certified", "monotone_ok", "init_ok", "unsafe_ok", "corner_check_ok")}
        needed = max(self.needed, self.queries)  # an int: a dense grid's count can pass a float's range
        out.update({"n_queries": float(self.queries), "n_queries_needed": float(min(needed, 10**300)),
                    "log10_queries_needed": math.log10(needed),
                    "verify_queries": float(self.queries - self.initial),
                    "budget_exceeded": float(self.budget_exceeded), "rounds": float(self.rounds.item()),
                    "dim": float(self.system.dim)})
        cell = cover_cell(self.net, self.cells)
        out["level_mean"] = float(cell[0].mean()) if cell is not None else 0.0
        self.audit_queries = 0
        out["audit_violations"] = self._audit()
        out["audit_queries"] = float(self.audit_queries)
        return out

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        for key, value in self.metrics().items():
            self.log(f"test/{key}", value, batch_size=1)
