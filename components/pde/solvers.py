"""Pseudo-spectral ETDRK4 solvers for a family of 1-D periodic PDEs (numpy), the data of lgs_pde.

Every family is u_t = L u + N(u) on a periodic interval, with L diagonal in Fourier space and the
nonlinearity N(u) = -g * (u^2 / 2)_x (g = 1 for Burgers and Kuramoto-Sivashinsky, 0 otherwise):

    heat                  u_t = nu u_xx                       nu = 0.05, [0, 2 pi), frames 0.1 apart
    advection             u_t = -c u_x                        c = 1,     [0, 2 pi), frames 0.1 apart
    burgers               u_t = -u u_x + nu u_xx              nu = 0.01, [0, 2 pi), frames 0.1 apart
    kuramoto_sivashinsky  u_t = -u u_x - u_xx - u_xxxx        [0, 22),  frames 1.0 apart, after t = 100

Low-viscosity Burgers steepens into shocks and Kuramoto-Sivashinsky on [0, 22) is chaotic (its
leading Lyapunov exponent is about 0.05, the classic L = 22 system), so a learned step's error grows
under autoregressive rollout. Time stepping is ETDRK4 (Cox & Matthews 2002) with the contour-integral
coefficients of Kassam & Trefethen (2005) and 2/3-rule dealiasing of the nonlinear term; each family
is integrated on a grid `refine` times finer than the returned one (so the Burgers fronts are
resolved) and subsampled. Initial conditions: a random sum of the Fourier modes 1..4 with max |u| = 1
(Kuramoto-Sivashinsky: scaled to 0.1 and then run to t = 100, onto its attractor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAMILIES = ("heat", "advection", "burgers", "kuramoto_sivashinsky")


@dataclass(frozen=True)
class Family:
    """One PDE: its domain length, the Fourier symbol of L as a function of the wavenumbers, the
    weight g of -(u^2/2)_x, the solver's time step, the time between frames and the spin-up time."""

    length: float
    nonlinear: float
    dt: float
    frame_dt: float
    spin_up: float = 0.0
    viscosity: float = 0.0
    speed: float = 0.0
    ks: bool = False

    def symbol(self, k: np.ndarray) -> np.ndarray:
        if self.ks:
            return (k**2 - k**4).astype(np.complex128)
        return -self.viscosity * k**2 - 1j * self.speed * k


PHYSICS = {
    "heat": Family(length=2 * np.pi, nonlinear=0.0, dt=0.1, frame_dt=0.1, viscosity=0.05),
    "advection": Family(length=2 * np.pi, nonlinear=0.0, dt=0.1, frame_dt=0.1, speed=1.0),
    "burgers": Family(length=2 * np.pi, nonlinear=1.0, dt=0.005, frame_dt=0.1, viscosity=0.01),
    "kuramoto_sivashinsky": Family(length=22.0, nonlinear=1.0, dt=0.25, frame_dt=1.0, spin_up=100.0, ks=True),
}


def etdrk4_coefficients(lin: np.ndarray, h: float, contour_points: int = 32) -> dict[str, np.ndarray]:
    """E = exp(hL), E2 = exp(hL/2) and the ETDRK4 weights Q, f1, f2, f3, by the mean over a circle of
    radius 1 around each hL (Kassam & Trefethen 2005), which avoids the cancellation at hL -> 0. The
    whole circle is used (not the upper half and a real part), so complex symbols (advection) hold."""
    roots = np.exp(2j * np.pi * (np.arange(1, contour_points + 1) - 0.5) / contour_points)
    lr = h * lin[:, None] + roots[None, :]
    return {
        "E": np.exp(h * lin), "E2": np.exp(h * lin / 2),
        "Q": h * np.mean((np.exp(lr / 2) - 1) / lr, axis=1),
        "f1": h * np.mean((-4 - lr + np.exp(lr) * (4 - 3 * lr + lr**2)) / lr**3, axis=1),
        "f2": h * np.mean((2 + lr + np.exp(lr) * (-2 + lr)) / lr**3, axis=1),
        "f3": h * np.mean((-4 - 3 * lr - lr**2 + np.exp(lr) * (4 - lr)) / lr**3, axis=1),
    }


def wavenumbers(n: int, length: float) -> np.ndarray:
    """The rfft wavenumbers 2 pi m / length, m = 0..n/2."""
    return 2 * np.pi * np.fft.rfftfreq(n, d=1.0 / n) / length


def solve(family: str, u0: np.ndarray, frames: int, spin_up: bool = True) -> np.ndarray:
    """Integrate a batch of initial fields u0 (B, n) of `family`; returns (B, frames, n): u0 (after
    the family's spin-up when `spin_up`) and then one field every frame_dt."""
    phys = PHYSICS[family]
    n = u0.shape[1]
    k = wavenumbers(n, phys.length)
    c = etdrk4_coefficients(phys.symbol(k), phys.dt)
    keep = (np.arange(len(k)) < n / 3).astype(np.float64)  # 2/3 rule on the nonlinear term
    g = -0.5j * k * phys.nonlinear * keep

    def nonlinear(v: np.ndarray) -> np.ndarray:
        return g * np.fft.rfft(np.fft.irfft(v, n=n) ** 2)

    def advance(v: np.ndarray, steps: int) -> np.ndarray:
        for _ in range(steps):
            nv = nonlinear(v)
            a = c["E2"] * v + c["Q"] * nv
            na = nonlinear(a)
            b = c["E2"] * v + c["Q"] * na
            nb = nonlinear(b)
            cc = c["E2"] * a + c["Q"] * (2 * nb - nv)
            v = c["E"] * v + nv * c["f1"] + 2 * (na + nb) * c["f2"] + nonlinear(cc) * c["f3"]
        return v

    v = np.fft.rfft(u0, axis=1)
    if spin_up and phys.spin_up:
        v = advance(v, int(round(phys.spin_up / phys.dt)))
    per_frame = int(round(phys.frame_dt / phys.dt))
    out = [np.fft.irfft(v, n=n)]
    for _ in range(frames - 1):
        v = advance(v, per_frame)
        out.append(np.fft.irfft(v, n=n))
    return np.stack(out, axis=1)


def random_fields(rng: np.random.Generator, count: int, n: int, modes: int = 4) -> np.ndarray:
    """(count, n) random smooth periodic fields: sum over m = 1..modes of a_m sin(m x + phi_m),
    a_m ~ U[0, 1] / m, scaled to max |u| = 1."""
    x = np.arange(n) * 2 * np.pi / n
    m = np.arange(1, modes + 1)
    amplitude = rng.uniform(0, 1, (count, modes)) / m
    phase = rng.uniform(0, 2 * np.pi, (count, modes))
    u = (amplitude[:, :, None] * np.sin(m[None, :, None] * x[None, None, :] + phase[:, :, None])).sum(1)
    return u / np.abs(u).max(axis=1, keepdims=True)


def trajectories(family: str, rng: np.random.Generator, count: int, frames: int, grid: int,
                 refine: int = 4) -> np.ndarray:
    """(count, frames, grid) trajectories of `family` from random initial fields, solved on a grid
    `refine` times finer and subsampled."""
    if family not in PHYSICS:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got '{family}'")
    u0 = random_fields(rng, count, grid * refine)
    if PHYSICS[family].ks:
        u0 = 0.1 * u0
    return solve(family, u0, frames)[:, :, ::refine]
