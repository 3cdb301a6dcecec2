"""components/pde/solvers.py: closed forms of the linear families, invariants of the nonlinear
ones, and the chaos that makes Kuramoto-Sivashinsky a rollout test."""

import numpy as np
import pytest

from components.pde.solvers import PHYSICS, etdrk4_coefficients, random_fields, solve, trajectories


def grid(n: int, length: float = 2 * np.pi) -> np.ndarray:
    return np.arange(n) * length / n


def test_heat_mode_decays_as_exp_minus_nu_k2_t():
    x = grid(64)
    u = solve("heat", np.sin(3 * x)[None], frames=11)
    nu, t = PHYSICS["heat"].viscosity, 10 * PHYSICS["heat"].frame_dt
    np.testing.assert_allclose(u[0, -1], np.exp(-nu * 9 * t) * np.sin(3 * x), atol=1e-10)


def test_advection_translates_by_c_t():
    x = grid(64)
    u = solve("advection", np.cos(2 * x + 0.3)[None], frames=6)
    t = 5 * PHYSICS["advection"].frame_dt
    np.testing.assert_allclose(u[0, -1], np.cos(2 * (x - PHYSICS["advection"].speed * t) + 0.3), atol=1e-10)


def test_burgers_keeps_its_mean_and_max_principle_and_steepens():
    u0 = random_fields(np.random.default_rng(0), 8, 256)
    u = solve("burgers", u0, frames=30)
    np.testing.assert_allclose(u.mean(axis=2), u0.mean(axis=1, keepdims=True).repeat(30, 1), atol=1e-8)
    assert np.abs(u).max() <= 1.0 + 0.02  # max |u| never grows (up to the spectral method's overshoot)
    slope = lambda v: np.abs(np.diff(v, axis=-1)).max(axis=-1)  # noqa: E731
    assert (slope(u[:, 15]) > 3 * slope(u[:, 0])).all()  # fronts form


def test_kuramoto_sivashinsky_is_bounded_and_chaotic():
    rng = np.random.default_rng(1)
    u0 = 0.1 * random_fields(rng, 4, 64)
    a = solve("kuramoto_sivashinsky", u0, frames=41)
    b = solve("kuramoto_sivashinsky", u0 + 1e-6 * rng.standard_normal(u0.shape), frames=41)
    assert 1.0 < np.abs(a).max() < 4.0  # the L = 22 attractor's range
    gap = np.linalg.norm(a - b, axis=2) / np.linalg.norm(a, axis=2)
    assert gap[:, -1].mean() > 20 * gap[:, 0].mean()  # a small perturbation grows over 40 time units


def test_etdrk4_coefficients_match_the_direct_formulas_away_from_zero():
    lin, h = np.array([-3.0, -0.7 + 0.4j, 2.0]), 0.5
    c = etdrk4_coefficients(lin, h)
    z = h * lin
    np.testing.assert_allclose(c["Q"], h * (np.exp(z / 2) - 1) / z, rtol=1e-10)
    np.testing.assert_allclose(c["f1"], h * (-4 - z + np.exp(z) * (4 - 3 * z + z**2)) / z**3, rtol=1e-8)
    near_zero = etdrk4_coefficients(np.array([1e-9]), h)
    np.testing.assert_allclose(near_zero["f1"].real, h / 6, rtol=1e-6)  # the limit at hL -> 0


def test_trajectories_shape_and_unknown_family():
    u = trajectories("heat", np.random.default_rng(0), 3, 5, 32)
    assert u.shape == (3, 5, 32) and np.isfinite(u).all()
    with pytest.raises(ValueError, match="family must be one of heat, advection, burgers, kuramoto_sivashinsky; got 'wave'"):
        trajectories("wave", np.random.default_rng(0), 3, 5, 32)
