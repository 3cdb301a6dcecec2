"""Training a neural observer with a global Lyapunov certificate (lmi_observer).

The data (`observer_trajectories`) holds noisy sampled outputs and true states of a Lur'e system;
the model (`nn_observer`, components/sysid/observer.py) is the observer's gains; the certificate
is the LMI of components/sysid/certificate.py, solved by cvxpy (Clarabel by default). Each
training step is one optimizer step (the `optimizer:` factory, e.g. Adam) on the mean squared
estimation error of the observer simulated over the training trajectories (differentiable RK4),
plus what `method` adds:

- `pretrain` (point-guided Lyapunov pre-training, stage 1): + lyapunov_weight * the mean over
  `points` sampled (true state, error) pairs of ReLU((dV/dt + alpha V) / |e|^2), V = e' P e with
  the model's own P = R R' + I (learned with the gains): local stability on the samples, no SDP.
- `lmi_finetune` (LMI fine-tuning, stage 2, after `init:` from stage 1): every `round_steps` steps
  one SDP projects (L, W2) onto the certified set (W1 fixed: `Certifier.project`), and the steps in
  between add lmi_weight * ReLU(lambda_max(M(theta; P, Lambda)) + lmi_margin) with that SDP's
  (P, Lambda) held fixed. At the end of fit the certificate is checked for the final weights
  (`Certifier.check`); if it fails, one more projection makes them certified.
- `direct_lmi` (the direct LMI-constrained baseline): every step is followed by the projection SDP,
  so the observer is certified after every step (projected gradient descent).

The cost of training is carried in the model's buffers across stages (`init:` loads them):
optimizer steps, SDP solves, the solvers' own iteration counts, and the CPU time of this process
(time.process_time) spent in training steps and SDPs (not in monitoring or evaluation).
Iteration counts are deterministic; CPU seconds are machine timing (supporting evidence only).

The target: the tuned Luenberger observer's validation RMSE (the best pole placement of the grid,
computed at fit start, not counted as cost). `*_to_target` is the cost when the observer was first
both certified (a solved projection whose weights pass the eigenvalue check) and at least as
accurate as that target on the validation trajectories, checked after each projection of
`lmi_finetune`, every `eval_every` steps of `direct_lmi` and after the final check; never
reached: the totals (a lower bound), with test/reached_target = 0.

Logged at test (every method, the same test trajectories):
- test/rmse (the observer), test/rmse_<state> per state;
- test/rmse_luenberger: a Luenberger observer, L by pole placement (scipy.signal.place_poles) of
  the linearization at the bottom (A + B H), poles -w * luenberger_ratios, w tuned over
  `luenberger_bandwidths` on the validation RMSE; test/luenberger_bandwidth and
  test/luenberger_at_edge (1 when the best w is the grid's first or last) and
  test/luenberger_certified (1 when the certificate LMI is feasible for its gain: a tuned linear
  gain need not have a global certificate, the pendulum's slope runs over [-1, 1]);
- test/rmse_open_loop: the copy of the model without correction (the trivial floor);
- test/cert_solver: 1 when the solver reports the certificate LMI feasible for the final weights
  (status optimal), else 0; test/cert_margin: -t* of the margin SDP (> 0 iff certifiable with
  P <= p_max I); test/cert_eig_margin: the independent check, -lambda_max(M) / lambda_max(P) in
  numpy for the margin SDP's (P, Lambda); test/certified: 1 when cert_solver = 1 and
  cert_eig_margin > 0;
- test/gradient_steps, test/sdp_solves, test/sdp_iterations, test/cpu_seconds (totals over the
  stages), test/reached_target, test/steps_to_target, test/sdp_iterations_to_target,
  test/cpu_seconds_to_target.
"""

from __future__ import annotations

import math
import time
from typing import Any, Literal

import lightning as L
import numpy as np
import torch

from components.sysid.certificate import Certifier, eig_margin
from components.sysid.observer import linear_correction, rmse, simulate
from components.types import PositiveInt


def luenberger_gain(system: Any, bandwidth: float, ratios: list[float]) -> np.ndarray:
    """L placing the poles of the linearization A + B H - L C at -bandwidth * ratios."""
    from scipy.signal import place_poles

    poles = -bandwidth * np.asarray(ratios, dtype=float)
    return place_poles(system.linearization(1.0).T, system.C.T, poles).gain_matrix.T


class NeuralObserverTraining(L.LightningModule):
    """Trains an `nn_observer` by `method` (module docstring) and evaluates it with the baselines.

    Args:
        model: The observer's weights (`nn_observer`).
        optimizer: Optimizer factory (e.g. Adam), applied to every weight.
        method: pretrain, lmi_finetune or direct_lmi.
        alpha: Decay rate of V in the point penalty and the certificate.
        lyapunov_weight: Weight of the point penalty (pretrain).
        points: Sampled (state, error) pairs per step (pretrain).
        error_scale: Errors sampled uniform in +- error_scale * the system's state ranges.
        round_steps: Steps between projections (lmi_finetune).
        lmi_weight: Weight of the eigenvalue penalty between projections (lmi_finetune).
        lmi_margin: The penalty pushes lambda_max(M) below -lmi_margin.
        eps: The certificate's strictness (M <= -eps I, P >= I).
        solver: cvxpy solver, CLARABEL or SCS.
        luenberger_bandwidths: The Luenberger baseline's grid of bandwidths w.
        luenberger_ratios: Pole ratios (poles at -w * ratios).
        eval_every: Steps between validation checks of direct_lmi's time to target.
    """

    def __init__(self, model: Any, optimizer: Any,
                 method: Literal["pretrain", "lmi_finetune", "direct_lmi"] = "pretrain",
                 alpha: float = 0.1, lyapunov_weight: float = 1.0, points: PositiveInt = 256,
                 error_scale: float = 1.0, round_steps: PositiveInt = 10, lmi_weight: float = 10.0,
                 lmi_margin: float = 1e-2, eps: float = 1e-3, solver: Literal["CLARABEL", "SCS"] = "CLARABEL",
                 luenberger_bandwidths: list[float] = [0.35, 0.5, 0.71, 1.0, 1.41, 2.0, 2.83],  # noqa: B006
                 luenberger_ratios: list[float] = [1.0, 1.5, 2.0],  # noqa: B006
                 eval_every: PositiveInt = 10) -> None:
        super().__init__()
        if method not in ("pretrain", "lmi_finetune", "direct_lmi"):
            raise ValueError(f"method must be pretrain, lmi_finetune or direct_lmi, got {method!r}")
        if alpha < 0 or eps <= 0 or len(luenberger_bandwidths) < 3:
            raise ValueError(f"need alpha >= 0, eps > 0 and >= 3 Luenberger bandwidths; got {alpha}, {eps}, "
                             f"{luenberger_bandwidths}")
        self.automatic_optimization = False
        self.model, self.optimizer_factory, self.method = model, optimizer, method
        self.alpha, self.lyapunov_weight, self.points, self.error_scale = alpha, lyapunov_weight, points, error_scale
        self.round_steps, self.lmi_weight, self.lmi_margin, self.eps = round_steps, lmi_weight, lmi_margin, eps
        self.solver, self.eval_every = solver, eval_every
        self.bandwidths, self.ratios = list(luenberger_bandwidths), list(luenberger_ratios)
        self._certifier: Certifier | None = None
        self._anchor: tuple[np.ndarray, np.ndarray] | None = None
        self._reached: dict[str, float] | None = None
        self._target: float | None = None

    # --- plumbing ------------------------------------------------------------------------------
    def configure_optimizers(self) -> torch.optim.Optimizer:
        return self.optimizer_factory(self.model.parameters())

    @property
    def data(self) -> Any:
        return self.trainer.datamodule

    @property
    def system(self) -> Any:
        return self.data.system

    def certifier(self) -> Certifier:
        if self._certifier is None:
            self._certifier = Certifier(self.system, self.model.hidden, alpha=self.alpha, eps=self.eps,
                                        solver=self.solver)
        return self._certifier

    def _matrices(self) -> dict[str, torch.Tensor]:
        return {k: torch.as_tensor(getattr(self.system, k), dtype=torch.float64) for k in ("A", "B", "H", "C")}

    # --- losses --------------------------------------------------------------------------------
    def _mse(self, split: str = "train") -> torch.Tensor:
        z, y = self.data.trajectories(split)
        return ((simulate(self.system, self.model.correction, y, self.data.dt) - z) ** 2).mean()

    def _point_penalty(self) -> torch.Tensor:
        s, m = self.system, self._matrices()
        x = torch.from_numpy(s.sample_states(self._rng, self.points))
        e = torch.from_numpy(self._rng.uniform(-1.0, 1.0, (self.points, s.state_dim)) * s.ranges * self.error_scale)
        estimate = x - e
        de = (e @ m["A"].T + (s.phi(x @ m["H"].T) - s.phi(estimate @ m["H"].T)) @ m["B"].T
              - self.model.correction(e @ m["C"].T))
        P = self.model.lyapunov()
        v, dv = ((e @ P) * e).sum(-1), 2 * ((e @ P) * de).sum(-1)
        return torch.relu((dv + self.alpha * v) / (e * e).sum(-1)).mean()

    def _lmi_penalty(self) -> torch.Tensor:
        s, m, mod = self.system, self._matrices(), self.model
        P, lam = (torch.as_tensor(a, dtype=torch.float64) for a in self._anchor)
        worst = []
        for delta in (s.slope_low, s.slope_high):
            A = m["A"] + delta * m["B"] @ m["H"] - mod.L @ m["C"]
            top = P @ A + A.T @ P + self.alpha * P
            off = -P @ mod.W2 + m["C"].T @ mod.W1.T @ torch.diag(lam)
            M = torch.cat([torch.cat([top, off], 1), torch.cat([off.T, -2 * torch.diag(lam)], 1)], 0)
            worst.append(torch.linalg.eigvalsh((M + M.T) / 2)[-1])
        return torch.relu(torch.stack(worst).max() + self.lmi_margin)

    # --- the certificate and its cost ------------------------------------------------------------
    def _count(self, solve: Any) -> None:
        self.model.sdp_solves += 1
        self.model.sdp_iterations += solve.iterations

    def _project(self) -> bool:
        """One projection SDP; True when its weights pass the eigenvalue check (certified)."""
        a = self.model.arrays()
        solve = self.certifier().project(a["L"], a["W1"], a["W2"])
        self._count(solve)
        if solve.L is None:
            return False
        self.model.set_gains(solve.L, solve.W2)
        self._anchor = (solve.P, solve.lam)
        return eig_margin(self.system, solve.P, solve.lam, solve.L, a["W1"], solve.W2, self.alpha) > 0

    def _check(self) -> bool:
        """The solver's feasibility of the certificate for the current weights, confirmed by eigenvalues."""
        a = self.model.arrays()
        solve = self.certifier().check(a["L"], a["W1"], a["W2"])
        self._count(solve)
        return solve.solved and eig_margin(self.system, solve.P, solve.lam, a["L"], a["W1"], a["W2"], self.alpha) > 0

    def _val_rmse(self) -> float:
        z, y = self.data.trajectories("val")
        with torch.no_grad():
            return rmse(simulate(self.system, self.model.correction, y, self.data.dt), z)

    def _note_target(self, certified: bool) -> None:
        """Record the cost the first time the observer is certified and as accurate as the target."""
        if self._reached is None and certified and self._val_rmse() <= self._target:
            m = self.model
            self._reached = {"steps": float(m.gradient_steps), "sdp_iterations": float(m.sdp_iterations),
                             "cpu_seconds": float(m.cpu_seconds)}

    # --- fit -----------------------------------------------------------------------------------
    def on_fit_start(self) -> None:
        self._rng = np.random.default_rng(torch.initial_seed())
        self._target = self._luenberger()["val"]

    def training_step(self, batch: Any, batch_idx: int) -> None:
        optimizer = self.optimizers()
        t = self.trainer.global_step
        start = time.process_time()
        certified = None
        if self.method == "lmi_finetune" and t % self.round_steps == 0:
            certified = self._project()
        optimizer.zero_grad()
        loss = self._mse()
        if self.method == "pretrain":
            loss = loss + self.lyapunov_weight * self._point_penalty()
        elif self.method == "lmi_finetune" and self._anchor is not None:
            loss = loss + self.lmi_weight * self._lmi_penalty()
        self.manual_backward(loss)
        optimizer.step()
        self.model.gradient_steps += 1
        if self.method == "direct_lmi":
            certified = self._project()
        self.model.cpu_seconds += time.process_time() - start
        if certified is not None and (self.method == "lmi_finetune" or (t + 1) % self.eval_every == 0):
            if self.method == "lmi_finetune":  # the projection came before this step's update
                self.model.gradient_steps -= 1
                self._note_target(certified)
                self.model.gradient_steps += 1
            else:
                self._note_target(certified)
        self.log("train/loss", loss.detach(), batch_size=1)

    def on_train_end(self) -> None:
        if self.method != "lmi_finetune":
            return
        start = time.process_time()
        certified = self._check()
        if not certified:
            certified = self._project()
        self.model.cpu_seconds += time.process_time() - start
        self._note_target(certified)

    # --- test ----------------------------------------------------------------------------------
    def _luenberger(self) -> dict[str, float]:
        z, y = self.data.trajectories("val")
        zt, yt = self.data.trajectories("test")
        dt = self.data.dt
        vals = []
        for w in self.bandwidths:
            value = rmse(simulate(self.system, linear_correction(luenberger_gain(self.system, w, self.ratios)), y, dt), z)
            vals.append(value if math.isfinite(value) else float("inf"))
        best = int(np.argmin(vals))
        gain = luenberger_gain(self.system, self.bandwidths[best], self.ratios)
        return {"val": vals[best], "test": rmse(simulate(self.system, linear_correction(gain), yt, dt), zt),
                "bandwidth": self.bandwidths[best], "edge": float(best in (0, len(vals) - 1))}

    def test_step(self, batch: Any, batch_idx: int) -> None:
        s, dt = self.system, self.data.dt
        z, y = self.data.trajectories("test")
        out: dict[str, float] = {}
        with torch.no_grad():
            estimate = simulate(s, self.model.correction, y, dt)
            out["test/rmse"] = rmse(estimate, z)
            for i, name in enumerate(s.names):
                out[f"test/rmse_{name}"] = rmse(estimate[..., i], z[..., i])
            out["test/rmse_open_loop"] = rmse(simulate(s, linear_correction(np.zeros((s.state_dim, s.output_dim))), y, dt), z)
        luen = self._luenberger()
        out.update({"test/rmse_luenberger": luen["test"], "test/luenberger_bandwidth": luen["bandwidth"],
                    "test/luenberger_at_edge": luen["edge"]})
        a = self.model.arrays()
        cert = self.certifier()
        gain = luenberger_gain(s, luen["bandwidth"], self.ratios)
        out["test/luenberger_certified"] = float(cert.check(gain, a["W1"], np.zeros_like(a["W2"])).solved)
        check = cert.check(a["L"], a["W1"], a["W2"])
        margin = cert.margin(a["L"], a["W1"], a["W2"])
        eig = (eig_margin(s, margin.P, margin.lam, a["L"], a["W1"], a["W2"], self.alpha)
               if margin.P is not None else float("nan"))
        out["test/cert_solver"] = float(check.solved)
        out["test/cert_margin"] = -margin.value
        out["test/cert_eig_margin"] = eig
        out["test/certified"] = float(check.solved and eig > 0)
        m = self.model
        totals = {"steps": float(m.gradient_steps), "sdp_iterations": float(m.sdp_iterations),
                  "cpu_seconds": float(m.cpu_seconds)}
        out.update({"test/gradient_steps": totals["steps"], "test/sdp_solves": float(m.sdp_solves),
                    "test/sdp_iterations": totals["sdp_iterations"], "test/cpu_seconds": totals["cpu_seconds"]})
        reached = self._reached
        out["test/reached_target"] = float(reached is not None)
        for key, value in (reached or totals).items():
            out[f"test/{key}_to_target"] = value
        for key, value in out.items():
            self.log(key, value, batch_size=1)
