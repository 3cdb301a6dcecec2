"""true_false_kb: statements about a synthetic knowledge base (components/interpretability/statements.py)."""

from __future__ import annotations

import numpy as np
import pytest

from components.interpretability.statements import IGNORE, TrueFalseKnowledgeBase, answer_tokens, statements


def _kb(**kwargs) -> TrueFalseKnowledgeBase:
    args = dict(num_entities=20, num_relations=3, num_values=5, num_train=4000, num_val=1000, num_test=1000)
    data = TrueFalseKnowledgeBase(**{**args, **kwargs})
    data.setup()
    return data


def test_answers_follow_the_knowledge_base() -> None:
    data = _kb(noise=0.0)
    facts, (ask, true_id, false_id) = data.facts(), answer_tokens(20, 3, 5)
    for name in ("train", "val", "test"):
        x, y, label = (data.split(name)[k].numpy() for k in ("x", "y", "label"))
        e, r, v = x[:, 0], x[:, 1] - 20, x[:, 2] - 23
        assert (x[:, 3] == ask).all() and (y[:, 0] == IGNORE).all() and (y[:, 2] == IGNORE).all()
        assert ((v == facts[e, r]) == (label == 1)).all()          # TRUE exactly when v is the fact
        assert (y[:, 3] == np.where(label == 1, true_id, false_id)).all()
        assert abs(label.mean() - 0.5) < 0.05
    train = data.split("train")
    x, y, label = (train[k].numpy() for k in ("x", "y", "label"))
    assert (y[label == 1, 1] == x[label == 1, 2]).all() and (y[label == 0, 1] == IGNORE).all()  # recite true values
    assert (data.split("test")["y"].numpy()[:, 1] == IGNORE).all()                                # eval: answers only
    assert data.info() == {"vocab_size": 31, "seq_len": 4}


def test_noise_flips_train_answers_only() -> None:
    data = _kb(noise=0.2)
    facts = data.facts()
    for name, expected in (("train", 0.2), ("test", 0.0)):
        x, label = data.split(name)["x"].numpy(), data.split(name)["label"].numpy()
        truth = x[:, 2] - 23 == facts[x[:, 0], x[:, 1] - 20]
        assert abs((truth != (label == 1)).mean() - expected) < 0.03


def test_long_tail_of_training_entities() -> None:
    data = _kb(zipf=1.0)
    p = data.entity_p()
    assert p[0] / p[9] == pytest.approx(10.0) and p.sum() == pytest.approx(1.0)
    train, test = data.split("train")["x"][:, 0].numpy(), data.split("test")["x"][:, 0].numpy()
    assert (train == 0).mean() > 5 * (train == 19).mean()                 # head vs tail in training
    assert abs((test == 0).mean() - (test == 19).mean()) < 0.04           # uniform at test


def test_seed_draws_the_knowledge_base() -> None:
    assert (_kb(seed=3).facts() == _kb(seed=3).facts()).all()
    assert (_kb(seed=3).facts() != _kb(seed=4).facts()).any()


def test_false_statements_never_use_the_fact() -> None:
    rng = np.random.default_rng(0)
    facts = rng.integers(2, size=(4, 2))
    out = statements(rng, facts, 2, 500, None, 0.0)
    v = out["x"][:, 2] - 6
    assert ((v == facts[out["x"][:, 0], out["x"][:, 1] - 4]) == (out["label"] == 1)).all()
