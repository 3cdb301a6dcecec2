"""Online identification of drifting linear-in-parameter systems: a plain loop over streams.

drift_sysid (abstract: ../../../shared/papers/drift_sysid.md). The data is a stream data module
(components/data/stream.py): S parallel streams in time order, one block per training step. At
each time t, for every stream, every learner predicts y_t by phi_t . theta_t, pays the squared
loss, and steps by projected online gradient descent,

    theta_{t+1} = Proj(theta_t + eta_t e_t phi_t),   e_t = y_t - phi_t . theta_t,

onto the ball (or box) of `radius`, starting from theta_0 = 0. The learners, run side by side
on the same streams: a grid of fixed steps (the oracle grid), and the step rules of `learners:`
(`step_rules` kind, e.g. the residual-adaptive rule).

What is accumulated, per stream and learner: the dynamic regret against the true parameters when
the stream has them (`theta`),

    R_T = sum_t 1/2 (phi_t . (theta_t - theta*_t))^2,

the expected regret with the noise's zero-mean cross term removed (the realized regret adds
-w_t phi_t . (theta_t - theta*_t), independent of the rest); without `theta` (real data) the
cumulative prediction loss sum_t 1/2 e_t^2 in its place.

Logged at test, per group g of the data (e.g. one drift rate and horizon; the mean over its
streams), with `<m>` = regret (or loss without `theta`):
- `test/<m>_oracle_<g>` and `test/eta_oracle_<g>`: the best fixed step of the grid's interior in
  hindsight (the oracle-tuned learner) and its step;
- `test/<m>_over_<g>`, `test/<m>_under_<g>` and `test/ratio_over_<g>`, `test/ratio_under_<g>`: the
  mis-tuned learners, the oracle's step times and divided by `mistuning`, and their ratio to the oracle;
- `test/<m>_<label>_<g>`, `test/ratio_<label>_<g>`: each rule of `learners:` and its ratio to the oracle;
- `test/proxy_ratio_<label>_<g>` (with `theta`, for a rule with a proxy): the median of the
  rule's proxy over the second half of the stream divided by the true path variation per step
  V_T / (T - 1): about 1 when the proxy tracks the drift, >> 1 when the noise overhead dominates.
Over all groups: `test/ratio_<label>_max`, `test/ratio_mistuned_min` (the smaller of the two
mis-tuned ratios, minimized over groups). Over the horizons of a series (the groups named
`<series>_T<horizon>` with the same `<series>`, e.g. `beta0_T1000`, `beta0_T4000`: one drift rate),
when it has two or more: `test/slope_<m>_oracle_<series>`, the least-squares slope of
log(oracle <m>) against log T (the exponent of the oracle's rate; one value per run, so a claim can
compare it across seeds). With `wear` in the data (degradation streams):
`test/health_spearman_<label>`, the mean over streams of Spearman's rank correlation between the
rule's residual proxy (`indicator`, the averaged squared residual) and the true wear over each stream's steps after `health_burn_in`.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

import numpy as np
import torch

from components.kinds import Kind
from components.tasks.loop import PlainLoop
from components.types import PositiveInt

StepRule = Annotated[Any, Kind("step_rules")]


def project(theta: np.ndarray, kind: str, radius: float) -> np.ndarray:
    """Euclidean projection of the last axis onto the ball (or box) of `radius`."""
    if kind == "box":
        return np.clip(theta, -radius, radius)
    norm = np.linalg.norm(theta, axis=-1, keepdims=True)
    return theta * np.minimum(1.0, radius / np.maximum(norm, 1e-300))


def step_grid(low: float, high: float, per_decade: int) -> np.ndarray:
    """Steps 10^(k / per_decade) for the integers k with low <= step <= high (up to rounding)."""
    first, last = math.ceil(per_decade * math.log10(low) - 1e-9), math.floor(per_decade * math.log10(high) + 1e-9)
    return 10.0 ** (np.arange(first, last + 1) / per_decade)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); nan when either side is constant."""
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


class OnlineIdentification(PlainLoop):
    """Projected online gradient descent on the squared prediction loss of every stream, with an
    oracle grid of fixed steps and the step rules of `learners:` side by side (module docstring).

    Args:
        learners: Step rules (`step_rules` kind) run next to the grid; labels must differ.
        grid_low, grid_high: Range of the oracle's fixed steps (the oracle is the best of them in
            hindsight, per group).
        grid_per_decade: Grid points per decade; log10(mistuning) * grid_per_decade must be an integer.
        mistuning: The mis-tuned learners' factor: the oracle's step times and divided by it
            (those steps run too: the grid is widened by log10(mistuning) decades on each side).
        projection: The constraint set, a ball or a box of `radius` (it must contain theta*).
        radius: Its radius.
        health_burn_in: Steps of each stream left out of the health-indicator correlation (the
            learner's start-up transient).
    """

    def __init__(
        self,
        learners: list[StepRule],
        grid_low: float = 1.0e-3,
        grid_high: float = 0.5,
        grid_per_decade: PositiveInt = 3,
        mistuning: float = 10.0,
        projection: Literal["ball", "box"] = "ball",
        radius: float = 1.5,
        health_burn_in: int = 0,
    ) -> None:
        super().__init__()
        labels = [getattr(rule, "label", None) for rule in learners]
        for rule in learners:
            missing = [m for m in ("reset", "step_size", "observe") if not callable(getattr(rule, m, None))]
            if missing:
                raise TypeError(f"learners must be step rules (components.sysid.step_rules), got "
                                f"{type(rule).__name__} without {', '.join(missing)}")
        reserved = {"oracle", "over", "under", "mistuned"}
        if len(set(labels)) != len(labels) or reserved & set(labels):
            raise ValueError(f"learner labels must differ and avoid {sorted(reserved)}, got {labels}")
        if not 0 < grid_low < grid_high or grid_per_decade < 1 or mistuning <= 1:
            raise ValueError(f"need 0 < grid_low < grid_high, grid_per_decade >= 1, mistuning > 1; got "
                             f"{grid_low}, {grid_high}, {grid_per_decade}, {mistuning}")
        offset = grid_per_decade * math.log10(mistuning)
        if abs(offset - round(offset)) > 1e-9:
            raise ValueError(f"log10(mistuning) * grid_per_decade must be an integer, got {offset:g}")
        if projection not in ("ball", "box") or radius <= 0 or health_burn_in < 0:
            raise ValueError(f"need projection ball|box, radius > 0, health_burn_in >= 0; got "
                             f"{projection!r}, {radius}, {health_burn_in}")
        self.learners, self.projection, self.radius, self.burn_in = list(learners), projection, radius, health_burn_in
        self.offset = int(round(offset))
        self.oracle_grid = step_grid(grid_low, grid_high, grid_per_decade)
        # The fixed steps that run: the oracle grid widened by the mis-tuning on both sides.
        self.etas = self.oracle_grid[0] * 10.0 ** (np.arange(-self.offset, len(self.oracle_grid) + self.offset)
                                                  / grid_per_decade)
        self.register_buffer("steps", torch.zeros(1, dtype=torch.float64))  # time steps processed
        self.state: dict[str, np.ndarray] = {}

    def loop_tensors(self) -> list[torch.Tensor]:
        return [self.steps]

    # --- the loop ----------------------------------------------------------------------------
    def on_fit_start(self) -> None:
        if not self.state:
            self._start(self.trainer.datamodule)

    def _start(self, data: Any) -> None:
        streams = data.streams
        count, length, dim = streams["x"].shape
        fixed, rules = len(self.etas), len(self.learners)
        self.groups, self.group_of = list(data.groups), np.asarray(data.group_of)
        self.state = {"theta": np.zeros((count, fixed + rules, dim)), "regret": np.zeros((count, fixed + rules)),
                      "proxy": np.full((count, rules, length), np.nan),
                      "indicator": np.full((count, rules, length), np.nan)}
        self.has_theta, self.has_wear = "theta" in streams, "wear" in streams
        self.reference = {k: streams[k].numpy() for k in ("theta", "wear", "mask") if k in streams}
        for rule in self.learners:
            rule.reset(count, dim, self.radius)

    def advance(self, batch: dict[str, torch.Tensor], t: int) -> None:
        """One block of every stream, step by step (t counts blocks)."""
        x, y, mask = batch["x"].numpy(), batch["y"].numpy(), batch["mask"].numpy()
        truth = batch["theta"].numpy() if "theta" in batch else None
        start = int(self.steps.item())
        theta, regret = self.state["theta"], self.state["regret"]
        proxy, indicator = self.state["proxy"], self.state["indicator"]
        fixed = len(self.etas)
        for k in range(x.shape[1]):
            phi, m = x[:, k], mask[:, k]
            residual = y[:, k, None] - np.einsum("sld,sd->sl", theta, phi)
            if truth is not None:
                excess = np.einsum("sld,sd->sl", theta - truth[:, k, None], phi)
                regret += 0.5 * m[:, None] * excess**2
            else:
                regret += 0.5 * m[:, None] * residual**2
            eta = np.empty(residual.shape)
            eta[:, :fixed] = self.etas
            for j, rule in enumerate(self.learners):
                eta[:, fixed + j] = rule.step_size(start + k)
            moved = project(theta + (eta * residual)[..., None] * phi[:, None, :], self.projection, self.radius)
            moved = np.where(m[:, None, None], moved, theta)
            for j, rule in enumerate(self.learners):
                rule.observe(moved[:, fixed + j] - theta[:, fixed + j], phi, residual[:, fixed + j], m)
                if rule.proxy is not None:
                    proxy[:, j, start + k] = rule.proxy
                if rule.indicator is not None:
                    indicator[:, j, start + k] = rule.indicator
            theta[...] = moved
        self.steps += x.shape[1]

    # --- the report --------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """Every test metric of the module docstring, from the accumulated state."""
        out: dict[str, float] = {}
        name = "regret" if self.has_theta else "loss"
        interior = np.arange(self.offset, len(self.etas) - self.offset)
        fixed = len(self.etas)
        ratios: dict[str, list[float]] = {}
        for g, group in enumerate(self.groups):
            members = self.group_of == g
            mean = self.state["regret"][members].mean(axis=0)
            best = interior[np.argmin(mean[interior])]
            oracle = mean[best]
            out[f"test/{name}_oracle_{group}"] = oracle
            out[f"test/eta_oracle_{group}"] = self.etas[best]
            for side, index in (("over", best + self.offset), ("under", best - self.offset)):
                out[f"test/{name}_{side}_{group}"] = mean[index]
                out[f"test/ratio_{side}_{group}"] = mean[index] / oracle
            ratios.setdefault("mistuned", []).append(min(out[f"test/ratio_over_{group}"], out[f"test/ratio_under_{group}"]))
            for j, rule in enumerate(self.learners):
                out[f"test/{name}_{rule.label}_{group}"] = mean[fixed + j]
                out[f"test/ratio_{rule.label}_{group}"] = mean[fixed + j] / oracle
                ratios.setdefault(rule.label, []).append(mean[fixed + j] / oracle)
                ratio = self._proxy_ratio(members, j) if self.has_theta else float("nan")
                if not math.isnan(ratio):
                    out[f"test/proxy_ratio_{rule.label}_{group}"] = ratio
        out["test/ratio_mistuned_min"] = min(ratios.pop("mistuned"))
        out.update(self._oracle_slopes(out, name))
        for label, values in ratios.items():
            out[f"test/ratio_{label}_max"] = max(values)
        if self.has_wear:
            for j, rule in enumerate(self.learners):
                rho = self._health(j)
                if not math.isnan(rho):
                    out[f"test/health_spearman_{rule.label}"] = rho
        return {k: float(v) for k, v in out.items()}

    def _oracle_slopes(self, out: dict[str, float], name: str) -> dict[str, float]:
        """Per series (groups `<series>_T<horizon>`, two or more horizons): the log-log slope of the
        oracle's regret (or loss) against T."""
        series: dict[str, list[tuple[int, float]]] = {}
        for group in self.groups:
            match = re.fullmatch(r"(.+)_T(\d+)", group)
            if match:
                series.setdefault(match[1], []).append((int(match[2]), out[f"test/{name}_oracle_{group}"]))
        slopes = {}
        for label, points in series.items():
            horizons, values = np.array(points, dtype=float).T
            if len(set(horizons)) >= 2 and (values > 0).all():
                slopes[f"test/slope_{name}_oracle_{label}"] = float(np.polyfit(np.log(horizons), np.log(values), 1)[0])
        return slopes

    def _proxy_ratio(self, members: np.ndarray, j: int) -> float:
        """Median proxy over each stream's second half / its true variation per step, median over streams."""
        values = []
        for s in np.flatnonzero(members):
            steps = self._seen(s)
            if steps < 4:
                continue
            path = self.reference["theta"][s, :steps]
            per_step = np.linalg.norm(np.diff(path, axis=0), axis=-1).sum() / max(steps - 1, 1)
            values.append(np.median(self.state["proxy"][s, j, steps // 2:steps]) / max(per_step, 1e-300))
        return float(np.median(values)) if values else float("nan")

    def _seen(self, s: int) -> int:
        """Time steps of stream s that fit processed (a shortened run stops early)."""
        return min(int(self.reference["mask"][s].sum()), int(self.steps.item()))

    def _health(self, j: int) -> float:
        """Mean over streams of Spearman(indicator, wear) after the burn-in (streams too short left out)."""
        values = []
        for s in range(len(self.group_of)):
            steps = self._seen(s)
            indicator, wear = self.state["indicator"][s, j, self.burn_in:steps], self.reference["wear"][s, self.burn_in:steps]
            rho = spearman(indicator, wear) if len(wear) >= 3 else float("nan")
            if not math.isnan(rho):
                values.append(rho)
        return float(np.mean(values)) if values else float("nan")

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        if not self.state:
            raise RuntimeError("online_identification reports what fit accumulated: run `phases: [fit, test]`")
        for key, value in self.metrics().items():
            self.log(key, value, batch_size=1)
