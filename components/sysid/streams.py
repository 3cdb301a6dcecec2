"""Streams for drift_sysid: a drifting linear-in-parameter system, synthetic engine wear, C-MAPSS.

Each is a `StreamData` (components/data/stream.py): parallel streams (S, T) in time order, with
regressors `x`, targets `y`, `mask`, and, where known, the true parameters `theta` (the
comparator sequence of the dynamic regret) or the true `wear` (the health-indicator reference).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

import numpy as np

from components.data.stream import StreamData, Streams
from components.types import PositiveInt


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _stay_inside(current: np.ndarray, move: np.ndarray, radius: float) -> np.ndarray:
    """current + move if inside the ball, else current - move, else a move of the same length
    towards the center (inside whenever |move| <= radius)."""
    for candidate in (current + move, current - move):
        if np.linalg.norm(candidate) <= radius:
            return candidate
    inward = -current / max(np.linalg.norm(current), 1e-300)
    return current + np.linalg.norm(move) * inward


def sinusoid_path(rng: np.random.Generator, steps: int, variation: float, dim: int, radius: float) -> np.ndarray:
    """theta*_t on a circle of radius 0.6 radius about a center at 0.3 radius, in a random plane,
    moving at constant speed so that sum_t |theta*_{t+1} - theta*_t| = variation (up to chord/arc)."""
    plane = np.linalg.qr(rng.standard_normal((dim, 2)))[0].T
    center = 0.3 * radius * _unit(rng, 1, dim)[0]
    orbit = 0.6 * radius
    angle = variation / orbit * np.arange(steps) / max(steps - 1, 1) + rng.uniform(0, 2 * math.pi)
    return center + orbit * (np.cos(angle)[:, None] * plane[0] + np.sin(angle)[:, None] * plane[1])


def random_walk_path(rng: np.random.Generator, steps: int, variation: float, dim: int, radius: float) -> np.ndarray:
    """Steps of equal length variation / (T - 1) in random directions; a step that would leave the
    ball of `radius` is taken backwards, or towards the center (the path variation is exactly `variation`)."""
    size = variation / max(steps - 1, 1)
    path = np.empty((steps, dim))
    path[0] = 0.5 * radius * _unit(rng, 1, dim)[0]
    moves = size * _unit(rng, steps, dim)
    for t in range(1, steps):
        path[t] = _stay_inside(path[t - 1], moves[t], radius)
    return path


def jumps_path(rng: np.random.Generator, steps: int, variation: float, dim: int, radius: float) -> np.ndarray:
    """Piecewise constant: ceil(variation / radius) jumps at uniform random times, each of length
    variation / jumps (<= radius) in a random direction, kept inside the ball as random_walk's steps are."""
    count = max(1, math.ceil(variation / radius))
    size = variation / count
    times = np.sort(rng.choice(np.arange(1, steps), size=min(count, steps - 1), replace=False))
    path = np.empty((steps, dim))
    current = 0.5 * radius * _unit(rng, 1, dim)[0]
    start = 0
    for t in [*times, steps]:
        path[start:t] = current
        current = _stay_inside(current, size * _unit(rng, 1, dim)[0], radius)
        start = t
    return path


PATHS = {"sinusoid": sinusoid_path, "random_walk": random_walk_path, "jumps": jumps_path}


class DriftingLinear(StreamData):
    """y_t = phi_t . theta*_t + noise w_t, with theta*_t drifting inside a ball, for a grid of
    horizons T and drift rates beta: the path variation is V_T = variation (T / reference_horizon)^beta.

    One group per (beta, T), named `beta<beta>_T<T>` (e.g. `beta0.3333_T4000`), of `replicates`
    streams; each stream draws its own path, regressors and noise from `seed`. Regressors are
    i.i.d. N(0, I_dim) (persistently exciting); w_t ~ N(0, noise^2).

    Args:
        dim: Parameter dimension d.
        horizons: Stream lengths T.
        betas: Drift-rate exponents beta (V_T grows like T^beta).
        variation: V_T at T = reference_horizon.
        reference_horizon: The T at which V_T = variation.
        drift: Shape of the path: sinusoid (smooth, constant speed), random_walk, jumps.
        noise: Standard deviation of w_t.
        radius: theta*_t stays in the ball of this radius.
        replicates: Streams per group.
        seed: Seed of paths, regressors and noise.
        block: Time steps per training batch.
    """

    def __init__(
        self,
        dim: PositiveInt = 5,
        horizons: list[PositiveInt] = [1000, 4000, 16000],  # noqa: B006 - a read-only default
        betas: list[float] = [0.0, 0.3333],  # noqa: B006
        variation: float = 4.0,
        reference_horizon: int = 1000,
        drift: Literal["sinusoid", "random_walk", "jumps"] = "sinusoid",
        noise: float = 0.1,
        radius: float = 1.0,
        replicates: PositiveInt = 4,
        seed: int = 0,
        block: int = 1000,
    ) -> None:
        super().__init__(block)
        if dim < 1 or replicates < 1 or not horizons or min(horizons) < 2 or not betas:
            raise ValueError(f"need dim >= 1, replicates >= 1, horizons >= 2 and a beta; got dim={dim}, "
                             f"replicates={replicates}, horizons={horizons}, betas={betas}")
        if variation < 0 or noise < 0 or radius <= 0 or reference_horizon < 1:
            raise ValueError(f"need variation >= 0, noise >= 0, radius > 0, reference_horizon >= 1; got "
                             f"{variation}, {noise}, {radius}, {reference_horizon}")
        if drift not in PATHS:
            raise ValueError(f"drift must be one of {sorted(PATHS)}, got {drift!r}")
        self.dim, self.horizons, self.betas = dim, list(horizons), list(betas)
        self.variation, self.reference, self.drift = variation, reference_horizon, drift
        self.noise, self.radius, self.replicates, self.seed = noise, radius, replicates, seed

    def path_variation(self, horizon: int, beta: float) -> float:
        """V_T of a group."""
        return self.variation * (horizon / self.reference) ** beta

    def make_streams(self) -> tuple[Streams, list[str], np.ndarray]:
        rng = np.random.default_rng(self.seed)
        length = max(self.horizons)
        configs = [(b, T) for b in self.betas for T in self.horizons]
        count = len(configs) * self.replicates
        theta = np.zeros((count, length, self.dim))
        x = rng.standard_normal((count, length, self.dim))
        mask = np.zeros((count, length), dtype=bool)
        groups, group_of = [], []
        for g, (beta, horizon) in enumerate(configs):
            groups.append(f"beta{beta:g}_T{horizon}")
            for r in range(self.replicates):
                s = g * self.replicates + r
                theta[s, :horizon] = PATHS[self.drift](rng, horizon, self.path_variation(horizon, beta),
                                                       self.dim, self.radius)
                mask[s, :horizon] = True
                group_of.append(g)
        y = (x * theta).sum(-1) + self.noise * rng.standard_normal((count, length))
        return {"x": x, "y": y * mask, "theta": theta, "mask": mask}, groups, np.array(group_of)


def ar_regressors(signal: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """AR(order) with intercept: phi_t = [1, s_{t-1}, ..., s_{t-order}], y_t = s_t, for t >= order."""
    if order < 0 or len(signal) <= order:
        raise ValueError(f"need 0 <= order < len(signal), got order={order}, len={len(signal)}")
    lags = [signal[order - k:len(signal) - k] for k in range(1, order + 1)]
    return np.stack([np.ones(len(signal) - order), *lags], axis=-1), signal[order:]


def _pack(series: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Streams:
    """Streams of different lengths (x_i, y_i, wear_i) as padded (S, T, ...) arrays with a mask."""
    length = max(len(y) for _, y, _ in series)
    dim = series[0][0].shape[1]
    out = {"x": np.zeros((len(series), length, dim)), "y": np.zeros((len(series), length)),
           "wear": np.zeros((len(series), length)), "mask": np.zeros((len(series), length), dtype=bool)}
    for s, (x, y, wear) in enumerate(series):
        n = len(y)
        out["x"][s, :n], out["y"][s, :n], out["wear"][s, :n], out["mask"][s, :n] = x, y, wear, True
    return out


def standardize(signal: np.ndarray, baseline: int) -> np.ndarray:
    """Centre and scale a signal by its first `baseline` values (the engine's healthy start):
    unsupervised, no label or future value is used."""
    head = signal[:baseline]
    return (signal - head.mean()) / (head.std() + 1e-12)


class SyntheticDegradation(StreamData):
    """A C-MAPSS stand-in: `engines` run to failure, each one sensor whose level rises with
    exponential wear, identified online by an AR(order) model with intercept.

    Engine i lives L_i ~ U(min_life, max_life) cycles; its wear is
    w_i(t) = (exp(r_i t / L_i) - 1) / (exp(r_i) - 1), r_i ~ U(3, 6), from 0 (new) to 1 (failure);
    the sensor is s_i(t) = amplitude w_i(t) + u_i(t), with u_i an AR(1) noise (coefficient 0.5,
    stationary standard deviation `noise`). The stream is the standardized sensor (by its first
    `baseline` cycles) as AR(order) regressors; `wear` is the true w_i(t), for evaluation only.

    Args:
        engines: Number of engines (streams).
        min_life, max_life: Range of the lives, in cycles.
        amplitude: Sensor shift at failure, in units of the noise standard deviation times `noise`.
        noise: Stationary standard deviation of the sensor noise.
        order: AR order of the identified model.
        baseline: Cycles used to standardize each sensor.
        seed: Seed of lives, wear rates and noise.
        block: Time steps per training batch.
    """

    def __init__(self, engines: int = 100, min_life: int = 150, max_life: int = 350, amplitude: float = 6.0,
                 noise: float = 1.0, order: int = 2, baseline: int = 20, seed: int = 0, block: int = 1000) -> None:
        super().__init__(block)
        if engines < 1 or not order + baseline < min_life <= max_life or noise <= 0 or amplitude < 0:
            raise ValueError(f"need engines >= 1, order + baseline < min_life <= max_life, noise > 0, amplitude >= 0; "
                             f"got {engines}, {order}, {baseline}, {min_life}, {max_life}, {noise}, {amplitude}")
        self.engines, self.lives, self.amplitude, self.noise = engines, (min_life, max_life), amplitude, noise
        self.order, self.baseline, self.seed = order, baseline, seed

    def make_streams(self) -> tuple[Streams, list[str], np.ndarray]:
        rng = np.random.default_rng(self.seed)
        series = []
        for _ in range(self.engines):
            life = int(rng.integers(self.lives[0], self.lives[1] + 1))
            rate = rng.uniform(3.0, 6.0)
            wear = np.expm1(rate * np.arange(life) / (life - 1)) / np.expm1(rate)
            shocks = rng.standard_normal(life) * self.noise * math.sqrt(1 - 0.25)
            u = np.empty(life)
            u[0] = self.noise * rng.standard_normal()
            for t in range(1, life):
                u[t] = 0.5 * u[t - 1] + shocks[t]
            signal = standardize(self.amplitude * self.noise * wear + u, self.baseline)
            x, y = ar_regressors(signal, self.order)
            series.append((x, y, wear[self.order:]))
        return _pack(series), ["engines"], np.zeros(self.engines, dtype=np.int64)


CMAPSS_COLUMNS = ["unit", "cycle", "op1", "op2", "op3", *[f"s{i}" for i in range(1, 22)]]


class CMAPSS(StreamData):
    """NASA C-MAPSS turbofan run-to-failure sensor streams (`train_FD00x.txt`), read from a local
    folder, never downloaded: one stream per (unit, sensor), the sensor standardized by the unit's
    first `baseline` cycles and identified online as AR(order) with intercept. `wear` is the
    fraction of life cycle / last cycle (units in the training files run to failure), used only
    to evaluate the health indicator.

    Args:
        root: Folder holding train_<subset>.txt (the unzipped CMAPSSData); None: $EXPSPEC_CMAPSS_DIR.
        subset: FD001 (one operating condition, one fault mode) to FD004.
        sensors: Sensor columns s1..s21 to identify (FD001's informative ones by default).
        order: AR order of the identified model.
        baseline: Cycles used to standardize each sensor per unit.
        units: Use the first `units` units (None: all).
        block: Time steps per training batch.
    """

    def __init__(self, root: str | None = None, subset: Literal["FD001", "FD002", "FD003", "FD004"] = "FD001",
                 sensors: list[str] = ["s2", "s3", "s4", "s7", "s11", "s12", "s15", "s17", "s20", "s21"],  # noqa: B006
                 order: int = 2, baseline: int = 20, units: int | None = None, block: int = 1000) -> None:
        super().__init__(block)
        unknown = [s for s in sensors if s not in CMAPSS_COLUMNS[5:]]
        if not sensors or unknown:
            raise ValueError(f"sensors must be a non-empty list of s1..s21, got unknown {unknown or sensors}")
        folder = Path(root or os.environ.get("EXPSPEC_CMAPSS_DIR", ""))
        self.path = folder / f"train_{subset}.txt"
        if not (root or os.environ.get("EXPSPEC_CMAPSS_DIR")) or not self.path.is_file():
            # Checked when the spec is built, before any stream is read: fail early, say how to fix it.
            raise FileNotFoundError(
                f"C-MAPSS file not found: {self.path} (from data.root, else $EXPSPEC_CMAPSS_DIR). Nothing is "
                f"downloaded: unzip NASA's CMAPSSData.zip (Prognostics Data Repository, 'Turbofan Engine "
                f"Degradation Simulation') into a folder and set data.root or $EXPSPEC_CMAPSS_DIR to it.")
        self.sensors, self.order, self.baseline, self.units = list(sensors), order, baseline, units

    def make_streams(self) -> tuple[Streams, list[str], np.ndarray]:
        import pandas as pd

        table = pd.read_csv(self.path, sep=r"\s+", header=None, names=CMAPSS_COLUMNS, usecols=range(26))
        series = []
        units = sorted(table["unit"].unique())[: self.units]
        for unit in units:
            rows = table[table["unit"] == unit].sort_values("cycle")
            life = rows["cycle"].to_numpy(dtype=float)
            for sensor in self.sensors:
                signal = standardize(rows[sensor].to_numpy(dtype=float), self.baseline)
                x, y = ar_regressors(signal, self.order)
                series.append((x, y, (life / life[-1])[self.order:]))
        return _pack(series), self.sensors, np.tile(np.arange(len(self.sensors)), len(units))
