"""corrupted_facts: answers that state the knowledge base, wrong values labelled token by token."""

from __future__ import annotations

import numpy as np
import pytest

from components.data.facts import BOS, END, IGNORE, SEP, CorruptedFacts, KnowledgeBase


def kb(**overrides: int) -> KnowledgeBase:
    args = dict(num_entities=8, num_relations=3, num_values=5, value_len=2, num_connectives=2, seed=0)
    return KnowledgeBase(**{**args, **overrides})


def stated_values(base: KnowledgeBase, x: np.ndarray) -> dict[tuple[int, int], tuple[int, ...]]:
    """(entity, relation) -> the value tokens an answer states, read back from its token ids."""
    entity, width, out = x[1] - base.entity0, 3 + base.value_len, {}
    for c in range(base.num_relations):
        clause = x[2 + c * width: 2 + (c + 1) * width]
        out[(entity, clause[0] - base.relation0)] = tuple(clause[2:-1])
    return out


def test_clean_answers_state_every_fact_of_the_knowledge_base_once() -> None:
    base = kb()
    arrays = base.answers(np.random.default_rng(1), 50, corruption_rate=0.0, corrupted_facts=1)
    assert arrays["x"].shape == (50, base.seq_len) == (50, 2 + 3 * 5)
    assert (arrays["labels"] == 0).all()
    for x in arrays["x"]:
        assert x[0] == BOS and x[-1] == END and list(x[6:-1:5]) == [SEP, SEP]
        facts = stated_values(base, x)
        assert sorted(r for _, r in facts) == [0, 1, 2]
        for (e, r), tokens in facts.items():
            assert tokens == tuple(base.value_tokens[r, base.facts[e, r]])


def test_labels_mark_exactly_the_tokens_that_differ_from_the_knowledge_base() -> None:
    base = kb()
    arrays = base.answers(np.random.default_rng(2), 400, corruption_rate=0.5, corrupted_facts=2)
    wrong_answers = 0
    for x, labels in zip(arrays["x"], arrays["labels"]):
        entity, width = x[1] - base.entity0, 3 + base.value_len
        expected = np.zeros_like(labels)
        for c in range(base.num_relations):
            start = 2 + c * width
            truth = base.value_tokens[x[start] - base.relation0, base.facts[entity, x[start] - base.relation0]]
            expected[start + 2: start + 2 + base.value_len] = x[start + 2: start + 2 + base.value_len] != truth
        np.testing.assert_array_equal(labels, expected)
        # a wrong value differs from the true one at every position: whole facts are wrong
        assert labels.sum() in (0, 2 * base.value_len)
        wrong_answers += labels.any()
    assert 160 <= wrong_answers <= 240  # corruption_rate 0.5 of 400


def test_values_of_a_relation_differ_at_every_position_and_ids_fit_the_vocabulary() -> None:
    base = kb(num_values=7, value_len=3)
    for r in range(base.num_relations):
        for j in range(base.value_len):
            assert len(set(base.value_tokens[r, :, j])) == base.num_values
    assert base.value_tokens.max() == base.vocab_size - 1
    assert base.value_tokens.min() == base.value0


def test_batches_shift_targets_mask_the_prompt_and_share_the_knowledge_base_across_seeds() -> None:
    data = CorruptedFacts(num_entities=8, num_relations=3, num_values=5, value_len=2, num_train=20,
                          num_val=4, num_test=4, batch_size=5, kb_seed=3, seed=0)
    data.setup()
    batch = next(iter(data.test_dataloader()))
    assert set(batch) == {"x", "y", "labels", "mask"}
    assert (batch["y"][:, :-1] == batch["x"][:, 1:]).all() and (batch["y"][:, -1] == IGNORE).all()
    assert not batch["mask"][:, :2].bool().any() and batch["mask"][:, 2:].bool().all()
    assert data.info() == {"vocab_size": data.kb.vocab_size, "seq_len": 17}
    other = CorruptedFacts(num_entities=8, num_relations=3, num_values=5, value_len=2, kb_seed=3, seed=9)
    np.testing.assert_array_equal(other.kb.facts, data.kb.facts)


def test_more_corrupted_facts_than_relations_is_refused() -> None:
    with pytest.raises(ValueError, match=r"corrupted_facts must be <= num_relations = 3, got 4"):
        CorruptedFacts(num_relations=3, corrupted_facts=4)
