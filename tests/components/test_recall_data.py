"""components/data/recall.py (mqar) and components/metrics/recall.py (masked_accuracy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.data.recall import MQAR, mqar_sequences
from components.metrics.recall import MaskedAccuracy


def test_every_query_targets_the_value_bound_to_its_key() -> None:
    data = mqar_sequences(np.random.default_rng(0), 50, seq_len=20, vocab_size=24, num_pairs=5)
    for x, y in zip(data["x"], data["y"]):
        keys, values = x[0:10:2], x[1:10:2]
        assert len(set(keys)) == 5 and keys.min() >= 1 and keys.max() < 12 and values.min() >= 12
        queries = np.flatnonzero(y != -100)
        assert len(queries) == 5 and queries.min() >= 10
        assert sorted(x[queries]) == sorted(keys)
        bound = dict(zip(keys, values))
        assert all(y[t] == bound[x[t]] for t in queries)
        assert (x[10:][y[10:] == -100] == 0).all()


def test_module_splits_and_info() -> None:
    data = MQAR(num_pairs=2, seq_len=8, vocab_size=8, num_train=30, num_val=5, num_test=7, batch_size=4, seed=1)
    assert {k: len(data.split(k)["x"]) for k in ("train", "val", "test")} == {"train": 30, "val": 5, "test": 7}
    assert data.info() == {"vocab_size": 8, "seq_len": 8}
    assert not torch.equal(data.split("train")["x"][:5], data.split("val")["x"])


@pytest.mark.parametrize("kwargs, message", [
    ({"num_pairs": 4, "seq_len": 11}, "seq_len must be >= 3 \\* num_pairs = 12, got 11"),
    ({"num_pairs": 4, "vocab_size": 9}, "vocab_size must leave num_pairs = 4 distinct keys .* so >= 10, got 9"),
])
def test_sizes_that_do_not_fit_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MQAR(**kwargs)


def test_masked_accuracy_counts_only_scored_positions() -> None:
    metric = MaskedAccuracy()
    logits = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    metric.update(logits, {"y": torch.tensor([1, -100, 1, -100])})
    assert metric.compute().item() == pytest.approx(0.5)
    metric.reset()
    with pytest.raises(RuntimeError, match="no scored position"):
        metric.update(logits, {"y": torch.full((4,), -100)})
        metric.compute()
