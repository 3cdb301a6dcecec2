"""components/sysid/step_rules.py: the step each rule gives, and what the adaptive rule's proxies measure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.sysid.step_rules import FixedStep, InverseSqrtStep, ResidualAdaptiveStep


def test_fixed_and_inverse_sqrt_steps() -> None:
    fixed, decaying = FixedStep(0.05), InverseSqrtStep(0.4)
    fixed.reset(3, 2, 1.0)
    decaying.reset(3, 2, 1.0)
    assert fixed.step_size(7).tolist() == [0.05] * 3
    assert decaying.step_size(0).tolist() == [0.4] * 3
    assert decaying.step_size(15) == pytest.approx([0.1] * 3)  # 0.4 / sqrt(16)
    assert fixed.proxy is None and decaying.indicator is None


def test_adaptive_proxy_tracks_a_constant_drift_and_sets_the_oracle_shaped_step() -> None:
    """Moves of a constant vector of norm delta: the averaged move tends to delta, and the step to
    scale (delta / radius)^(1/3) / power, the oracle's cube-root scaling."""
    rule = ResidualAdaptiveStep(scale=2.0, window=10)
    rule.reset(1, 2, radius=1.5)
    delta, phi = 1e-3, np.array([[1.0, 1.0]])  # |phi|^2 = 2
    for _ in range(400):
        rule.observe(np.array([[0.6 * delta, 0.8 * delta]]), phi, np.array([0.3]), np.array([True]))
    assert rule.proxy[0] == pytest.approx(delta, rel=1e-12)
    assert rule.step_size(400)[0] == pytest.approx(2.0 * (delta / 1.5) ** (1 / 3) / 2.0, rel=1e-12)
    assert rule.indicator[0] == pytest.approx(0.09, rel=1e-12)  # the averaged squared residual


def test_adaptive_proxy_of_pure_noise_is_the_averaging_overhead() -> None:
    """Zero-mean moves of standard deviation s per coordinate: no drift, yet the proxy stays near
    s sqrt(d / (2 window - 1)) (the stationary spread of the average): the overhead the failure
    regime is made of."""
    rng = np.random.default_rng(0)
    rule = ResidualAdaptiveStep(window=50)
    streams, dim, s = 2000, 5, 0.01
    rule.reset(streams, dim, 1.0)
    for _ in range(500):
        rule.observe(s * rng.standard_normal((streams, dim)), np.ones((streams, dim)), np.zeros(streams),
                     np.ones(streams, dtype=bool))
    expected = s * math.sqrt(dim / (2 * 50 - 1))
    assert np.sqrt(np.mean(rule.proxy**2)) == pytest.approx(expected, rel=0.05)


def test_adaptive_indicator_is_bias_corrected_and_masked_steps_change_nothing() -> None:
    rule = ResidualAdaptiveStep(window=100)
    rule.reset(2, 1, 1.0)
    rule.observe(np.zeros((2, 1)), np.ones((2, 1)), np.array([2.0, 5.0]), np.array([True, False]))
    assert rule.indicator.tolist() == [4.0, 0.0]  # the first residual, squared: no ramp from 0
    assert rule.step_size(1)[1] == pytest.approx(0.5 / 1.0)  # untouched: initial gain / dim


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"scale": 0.0}, "scale must be > 0"),
    ({"window": 0}, "window must be >= 1 step, got 0"),
    ({"initial_normalized_step": 2.0}, "need 0 < initial_normalized_step <= max_normalized_step"),
    ({"label": "a b"}, "label must be a non-empty word"),
])
def test_adaptive_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResidualAdaptiveStep(**kwargs)
