"""Knowledge-base answers with corrupted spans and exact token labels: a synthetic data engine for
token-level hallucination detection (tokenhd, specs/tokenhd/) and any paper that needs text whose
errors are known token by token (closed-book QA, fact verification, error localization).

A knowledge base is drawn from `kb_seed`: `num_entities` entities, each with one value for every
one of `num_relations` relations (a value index in [0, num_values)); value v of relation r is spelled
by `value_len` tokens, and two values of one relation differ at every position. An answer about
entity e is one sequence of fixed length 2 + num_relations * (3 + value_len):

    BOS e | r c v_1 .. v_value_len SEP | r' c' ... | ... END

the prompt (BOS e) and then every relation of e once, in a random order, each as relation token,
connective token (one of `num_connectives`, drawn at random: free wording that is correct but
unpredictable, like the many plausible phrasings of free-form text), value tokens, separator (the
last one END). With probability `corruption_rate` an answer is hallucinated: `corrupted_facts` of
its facts (chosen at random) state a wrong value of their relation, drawn uniformly from the others.

Token labels: 1.0 on a token that differs from the knowledge base's token at its position (every
value token of a corrupted fact), 0.0 elsewhere; `mask` is true on the answer (every token after the
prompt), the tokens a detector is scored on.

Batches: {"x": ids (B, L) long, "y": the next token at each position (B, L) long, -100 at the last,
"labels": (B, L) float, "mask": (B, L) bool}; `x`/`y` serve `language_modeling` (an LM that learns
the knowledge base from clean answers, corruption_rate 0), `labels`/`mask` the detectors. `info()`
reports vocab_size and seq_len. The knowledge base depends on `kb_seed` only; train, val and test
answers are drawn from `seed` (in that order), so specs with one kb_seed share their facts.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from annotated_types import Ge

from components.data.base import ArrayDataModule, Arrays
from components.types import NonNegativeInt, PositiveInt, Probability

IGNORE = -100  # torch's default ignore_index
PAD, BOS, SEP, END = 0, 1, 2, 3
SPECIAL = 4  # ids below this are the special tokens above


class KnowledgeBase:
    """The facts and the token layout of `corrupted_facts` (module docstring).

    Token ids: 0-3 special, then entities, relations, connectives, and value tokens; the value
    tokens of relation r at position j are a block of num_values ids of their own, and value v of
    relation r is spelled value_tokens[r, v] (value_len ids) with value_tokens[r, v, j] =
    base(r, j) + perm_{r,j}(v): a permutation per (relation, position), so values differ at every
    position.
    """

    def __init__(self, num_entities: int, num_relations: int, num_values: int, value_len: int,
                 num_connectives: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.num_entities, self.num_relations, self.num_values = num_entities, num_relations, num_values
        self.value_len, self.num_connectives = value_len, num_connectives
        self.entity0 = SPECIAL
        self.relation0 = self.entity0 + num_entities
        self.connective0 = self.relation0 + num_relations
        self.value0 = self.connective0 + num_connectives
        self.vocab_size = self.value0 + num_relations * value_len * num_values
        self.facts = rng.integers(0, num_values, size=(num_entities, num_relations))  # value index
        blocks = self.value0 + num_values * np.arange(num_relations * value_len).reshape(num_relations, value_len)
        perms = np.argsort(rng.random((num_relations, value_len, num_values)), axis=2)
        # value_tokens[r, v, j]: the j-th token of value v of relation r
        self.value_tokens = (blocks[:, :, None] + perms).transpose(0, 2, 1)

    @property
    def seq_len(self) -> int:
        return 2 + self.num_relations * (3 + self.value_len)

    def answers(self, rng: np.random.Generator, count: int, corruption_rate: float, corrupted_facts: int) -> Arrays:
        """`count` answers about random entities (module docstring): {"x", "y", "labels", "mask"}."""
        n_rel, width = self.num_relations, 3 + self.value_len
        entities = rng.integers(0, self.num_entities, size=count)
        order = np.argsort(rng.random((count, n_rel)), axis=1)          # relation of each clause
        values = self.facts[entities[:, None], order]                    # true value of each clause
        wrong = (rng.random(count) < corruption_rate)[:, None] & (
            np.argsort(rng.random((count, n_rel)), axis=1) < corrupted_facts)
        shift = rng.integers(1, self.num_values, size=(count, n_rel))   # another value, uniformly
        stated = np.where(wrong, (values + shift) % self.num_values, values)
        clauses = np.empty((count, n_rel, width), dtype=np.int64)
        clauses[:, :, 0] = self.relation0 + order
        clauses[:, :, 1] = self.connective0 + rng.integers(0, self.num_connectives, size=(count, n_rel))
        clauses[:, :, 2:-1] = self.value_tokens[order, stated]
        clauses[:, :, -1] = SEP
        clauses[:, -1, -1] = END
        labels = np.zeros((count, n_rel, width), dtype=np.float32)
        labels[:, :, 2:-1] = self.value_tokens[order, stated] != self.value_tokens[order, values]
        prompt = np.stack([np.full(count, BOS), self.entity0 + entities], axis=1)
        x = np.concatenate([prompt, clauses.reshape(count, -1)], axis=1)
        y = np.concatenate([x[:, 1:], np.full((count, 1), IGNORE)], axis=1)
        labels = np.concatenate([np.zeros((count, 2), dtype=np.float32), labels.reshape(count, -1)], axis=1)
        mask = np.ones_like(x, dtype=bool)
        mask[:, :2] = False
        return {"x": x, "y": y, "labels": labels, "mask": mask}


class CorruptedFacts(ArrayDataModule):
    """Answers about a synthetic knowledge base, some with wrong values, labelled per token
    (module docstring).

    Args:
        num_entities: Entities in the knowledge base.
        num_relations: Relations; every answer states all of them, so also the facts per answer.
        num_values: Values per relation (a wrong value is one of the other num_values - 1).
        value_len: Tokens that spell a value.
        num_connectives: Interchangeable connective tokens between relation and value (free wording).
        corruption_rate: Probability that an answer is hallucinated; 0 for clean text.
        corrupted_facts: Facts stated wrongly in a hallucinated answer.
        num_train: Training answers.
        num_val: Validation answers.
        num_test: Test answers.
        batch_size: Answers per batch.
        kb_seed: Seed of the knowledge base (the facts and the spelling of values).
        seed: Seed of the answers (train, val, test drawn in that order).
    """

    def __init__(
        self,
        num_entities: PositiveInt = 64,
        num_relations: PositiveInt = 4,
        num_values: Annotated[int, Ge(2)] = 16,
        value_len: PositiveInt = 3,
        num_connectives: PositiveInt = 4,
        corruption_rate: Probability = 0.5,
        corrupted_facts: PositiveInt = 1,
        num_train: PositiveInt = 20000,
        num_val: PositiveInt = 500,
        num_test: PositiveInt = 1000,
        batch_size: PositiveInt = 64,
        kb_seed: NonNegativeInt = 0,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if corrupted_facts > num_relations:
            raise ValueError(f"corrupted_facts must be <= num_relations = {num_relations}, got {corrupted_facts}")
        self.kb = KnowledgeBase(num_entities, num_relations, num_values, value_len, num_connectives, kb_seed)
        self.corruption_rate, self.corrupted_facts, self.seed = corruption_rate, corrupted_facts, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        return {split: self.kb.answers(rng, count, self.corruption_rate, self.corrupted_facts)
                for split, count in self.sizes.items()}

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which `language_modeling` checks against the model."""
        return {"vocab_size": self.kb.vocab_size, "seq_len": self.kb.seq_len}
