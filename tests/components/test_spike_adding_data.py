"""components/data/spike_adding.py: the SHD-Adding stand-in."""

from __future__ import annotations

import numpy as np
import pytest

from components.data.spike_adding import SpikeAdding, digit_templates, spike_adding_samples


def test_targets_are_sums_and_digits_sit_in_their_halves() -> None:
    # Noise-free: rate_off = 0 and rate_on = 1, so spikes are exactly the templates' on bins.
    templates = digit_templates(0, 3, 4, 2, density=0.5, rate_on=1.0, rate_off=0.0)
    out = spike_adding_samples(np.random.default_rng(0), 200, templates, steps=8, rate_off=0.0)
    assert out["x"].shape == (200, 8, 4) and out["y"].dtype == np.int64
    for x, y in zip(out["x"], out["y"]):
        found = []
        for half in (x[:4], x[4:]):
            matches = {d for d in range(3) for s in range(3) if np.array_equal(half[s:s + 2], templates[d])
                       and half.sum() == templates[d].sum()}
            found.append(matches)
        assert any(a + b == y for a in found[0] for b in found[1])
    assert set(out["y"].tolist()) == {0, 1, 2, 3, 4}


def test_firing_rates_follow_the_templates() -> None:
    templates = digit_templates(1, 2, 16, 5, density=0.25, rate_on=0.6, rate_off=0.05)
    assert set(np.unique(templates)) == {0.05, 0.6}
    assert abs((templates == 0.6).mean() - 0.25) < 0.08
    out = spike_adding_samples(np.random.default_rng(0), 4000, templates, steps=20, rate_off=0.05)
    assert 0.05 < out["x"].mean() < 0.05 + 0.25 * 0.55 * 10 / 20 + 0.01


def test_module_splits_info_and_seeds() -> None:
    data = SpikeAdding(num_train=64, num_val=16, num_test=32, seed=3)
    data.setup()
    assert {k: len(data.split(k)["y"]) for k in ("train", "val", "test")} == {"train": 64, "val": 16, "test": 32}
    assert data.info() == {"in_features": 32, "num_classes": 9, "seq_len": 40}
    again = SpikeAdding(num_train=64, num_val=16, num_test=32, seed=3)
    other = SpikeAdding(num_train=64, num_val=16, num_test=32, seed=4)
    assert np.array_equal(again.split("train")["x"].numpy(), data.split("train")["x"].numpy())
    assert not np.array_equal(other.split("train")["x"].numpy(), data.split("train")["x"].numpy())
    np.testing.assert_array_equal(other.templates, data.templates)   # the task is the same


def test_a_window_longer_than_half_is_refused() -> None:
    with pytest.raises(ValueError, match="window must fit in half the sequence, <= steps // 2 = 5, got 6"):
        SpikeAdding(steps=10, window=6)
