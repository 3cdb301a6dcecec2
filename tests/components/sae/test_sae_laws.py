"""The data-constrained law: effective data, a fit that recovers a law it generated, and the
held-out comparison with a plain power law that tells the two apart (R^2 does not)."""

import math
import random

import pytest

from components.sae.laws import (
    data_constrained_held_out_ratio,
    data_constrained_r2,
    effective_samples,
    fit_data_constrained_law,
    fit_power_law,
)

TOTAL = 2**17
UNIQUE = [256, 1024, 4096, 8192, TOTAL]  # replay_seeds.yaml's buffer sizes


def _data_constrained(e, a, alpha, r_star):
    return [e + a * (effective_samples(u, TOTAL, r_star) / TOTAL) ** -alpha for u in UNIQUE]


def _power_law(e, a, alpha):
    return [e + a * (u / TOTAL) ** -alpha for u in UNIQUE]


def test_effective_samples_limits():
    assert effective_samples(100, 100, 5.0) == 100, "no repetition: every sample counts"
    assert effective_samples(10, 1e9, 5.0) == pytest.approx(10 * (1 + 5.0)), "endless repetition: U (1 + R*)"
    assert effective_samples(90, 100, 50.0) == pytest.approx(100, rel=2e-3), "few repeats are nearly fresh"


def test_fit_recovers_a_generated_law():
    total, e, a, alpha, r_star = 2**17, 0.06, 0.01, 0.8, 6.0
    unique = [total // d for d in (512, 256, 128, 64, 32, 16, 8, 4, 1)]
    values = [e + a * (effective_samples(u, total, r_star) / total) ** -alpha for u in unique]
    fit = fit_data_constrained_law(unique, total, values)
    assert fit["r2"] > 0.99999
    assert fit["alpha"] == pytest.approx(alpha, rel=0.05) and fit["r_star"] == pytest.approx(r_star, rel=0.1)
    assert fit["e"] == pytest.approx(e, rel=0.05)


def test_flat_values_fit_badly_shaped_noise_poorly():
    values = [0.1, 0.3, 0.1, 0.3, 0.1, 0.3]
    assert data_constrained_r2([1, 2, 4, 8, 16, 32], 32, values) < 0.5


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="need >= 3 runs"):
        fit_data_constrained_law([1, 2], 4, [0.1, 0.2])
    with pytest.raises(ValueError, match=r"unique must be in \(0, total = 4\], got 5"):
        effective_samples(5, 4, 1.0)
    assert math.isfinite(data_constrained_r2([1, 2, 4], 4, [0.3, 0.2, 0.1]))


def test_power_law_fit_recovers_a_generated_law():
    fit = fit_power_law(UNIQUE, TOTAL, _power_law(0.05, 0.01, 0.5))
    assert fit["r2"] > 0.99999 and fit["alpha"] == pytest.approx(0.5, rel=0.02)


def test_r2_does_not_tell_the_laws_apart():
    """Why the claims do not use R^2: the data-constrained law fits a curve with no plateau too."""
    assert data_constrained_r2(UNIQUE, TOTAL, _power_law(0.05, 0.01, 0.5)) > 0.99


@pytest.mark.parametrize("r_star, alpha", [(6.0, 0.8), (30.0, 1.0), (300.0, 2.5)])
def test_held_out_ratio_prefers_the_data_constrained_law_on_its_own_curves(r_star, alpha):
    assert data_constrained_held_out_ratio(UNIQUE, TOTAL, _data_constrained(0.06, 0.01, alpha, r_star)) < 0.05


@pytest.mark.parametrize("alpha", [0.3, 0.5, 1.0])
def test_held_out_ratio_rejects_a_plain_power_law(alpha):
    assert data_constrained_held_out_ratio(UNIQUE, TOTAL, _power_law(0.05, 0.01, alpha)) > 1.0


def test_held_out_ratio_rejects_random_decreasing_curves():
    rng = random.Random(0)
    curves = [sorted((rng.uniform(0.05, 0.3) for _ in UNIQUE), reverse=True) for _ in range(10)]
    assert all(data_constrained_held_out_ratio(UNIQUE, TOTAL, c) > 0.5 for c in curves)


def test_held_out_ratio_needs_five_runs():
    with pytest.raises(ValueError, match="need >= 5 runs to hold one out of a 4-parameter law, got 4"):
        data_constrained_held_out_ratio(UNIQUE[:4], TOTAL, [0.3, 0.2, 0.1, 0.05])
