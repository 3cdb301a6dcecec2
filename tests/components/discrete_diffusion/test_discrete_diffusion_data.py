"""components/discrete_diffusion/data.py: the planted-hierarchy language has the stated vocabulary,
function-token rate, sticky clusters and Zipfian tokens inside a cluster."""

from __future__ import annotations

import numpy as np
import pytest

from components.discrete_diffusion.data import HierarchicalLanguage


def test_the_language_has_its_planted_structure() -> None:
    data = HierarchicalLanguage(num_train=2000, num_val=10, num_test=10, seed=0)
    x = data.split("train")["x"].numpy()
    assert x.shape == (2000, 32) and data.vocab_size == 48 and x.max() < 48
    assert data.info() == {"vocab_size": 48, "seq_len": 32}
    clusters = data.token_clusters[x]
    function = clusters == data.function_cluster
    assert function.mean() == pytest.approx(0.25, abs=0.01)
    content = ~function[:, :-1] & ~function[:, 1:]
    same = (clusters[:, :-1] == clusters[:, 1:])[content].mean()
    assert same == pytest.approx(0.9, abs=0.02)  # neighbours keep the cluster with stay_prob
    counts = np.bincount(x[clusters == 0], minlength=8)[:8]
    assert counts[0] / counts[1] == pytest.approx(2.0, rel=0.15)  # Zipf: rank 1 twice as frequent as rank 2
    assert set(data.token_clusters.tolist()) == set(range(6))


def test_the_seed_draws_the_sequences() -> None:
    first = HierarchicalLanguage(num_train=5, num_val=1, num_test=1, seed=1).split("test")["x"]
    again = HierarchicalLanguage(num_train=5, num_val=1, num_test=1, seed=1).split("test")["x"]
    other = HierarchicalLanguage(num_train=5, num_val=1, num_test=1, seed=2).split("test")["x"]
    assert (first == again).all() and not (first == other).all()
