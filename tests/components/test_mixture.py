"""The mixture sampler (components/data/mixture.py): warm-up on one source, then draws at the
stated ratio, the same sequence for the same seed."""

from __future__ import annotations

import pytest

from components.data.mixture import MixedBatches, MixtureSchedule


def test_warmup_then_the_ratio() -> None:
    schedule = MixtureSchedule({"a": 0.25, "b": 0.75}, seed=3, warmup_source="b", warmup_steps=100)
    assert all(schedule.source(i) == "b" for i in range(100))
    later = [schedule.source(i) for i in range(100, 4100)]
    assert abs(later.count("a") / len(later) - 0.25) < 0.03


def test_a_single_positive_weight_and_determinism() -> None:
    assert {MixtureSchedule({"a": 1.0, "b": 0.0}).source(i) for i in range(50)} == {"a"}
    one, two = MixtureSchedule({"a": 1, "b": 1}, seed=5), MixtureSchedule({"a": 1, "b": 1}, seed=5)
    assert [one.source(i) for i in range(200)] == [two.source(i) for i in range(200)]
    assert [one.source(i) for i in range(200)] != [MixtureSchedule({"a": 1, "b": 1}, seed=6).source(i) for i in range(200)]


def test_mixed_batches_call_the_scheduled_source() -> None:
    schedule = MixtureSchedule({"a": 1.0, "b": 0.0}, warmup_source="b", warmup_steps=2)
    batches = MixedBatches(schedule, {"a": lambda i: ("a", i), "b": lambda i: ("b", i)}, steps=4)
    assert [batches[i] for i in range(len(batches))] == [("b", 0), ("b", 1), ("a", 2), ("a", 3)]
    with pytest.raises(ValueError, match="no source"):
        MixedBatches(schedule, {"a": lambda i: i}, steps=1)
    with pytest.raises(ValueError):
        MixtureSchedule({"a": 0.0})
