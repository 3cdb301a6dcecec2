"""The data-constrained law: effective data, and a fit that recovers a law it generated."""

import math

import pytest

from components.sae.laws import data_constrained_r2, effective_samples, fit_data_constrained_law


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
