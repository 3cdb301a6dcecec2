"""Multi-query associative recall (MQAR, Zoology: Arora et al. 2023): a synthetic test of whether
a sequence model can look up values bound to keys earlier in its context.

A sequence of seq_len tokens opens with num_pairs key-value pairs (k_1 v_1 ... k_n v_n: distinct
keys from [1, vocab_size / 2), values from [vocab_size / 2, vocab_size)); each key is then queried
once, in a random order, at a random position of the rest of the sequence; token 0 fills the
other positions. The target at a query position is the value bound to its key; every other
target is -100, which `cross_entropy` (torch's default ignore_index) and `masked_accuracy` skip.

Batches are {"x": (B, seq_len) long, "y": (B, seq_len) long}; `info()` reports vocab_size and
seq_len for the `language_modeling` task's checks. Splits are drawn independently from `seed`.
Used by llops (specs/llops/).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from annotated_types import Ge

from components.data.base import Arrays, ArrayDataModule
from components.types import PositiveInt

IGNORE = -100  # the target of a position that is not a query (torch's default ignore_index)


def mqar_sequences(rng: np.random.Generator, count: int, seq_len: int, vocab_size: int, num_pairs: int) -> Arrays:
    """`count` MQAR sequences (module docstring): {"x", "y"}, each (count, seq_len) int64."""
    half = vocab_size // 2
    x = np.zeros((count, seq_len), dtype=np.int64)
    y = np.full((count, seq_len), IGNORE, dtype=np.int64)
    rows = np.arange(count)[:, None]
    keys = np.argsort(rng.random((count, half - 1)), axis=1)[:, :num_pairs] + 1
    values = rng.integers(half, vocab_size, size=(count, num_pairs))
    x[:, 0:2 * num_pairs:2], x[:, 1:2 * num_pairs:2] = keys, values
    order = np.argsort(rng.random((count, num_pairs)), axis=1)
    slots = np.sort(np.argsort(rng.random((count, seq_len - 2 * num_pairs)), axis=1)[:, :num_pairs], axis=1)
    positions = 2 * num_pairs + slots
    x[rows, positions] = keys[rows, order]
    y[rows, positions] = values[rows, order]
    return {"x": x, "y": y}


class MQAR(ArrayDataModule):
    """Multi-query associative recall sequences (module docstring).

    Args:
        num_pairs: Key-value pairs per sequence (each queried once).
        seq_len: Tokens per sequence; at least 3 * num_pairs (pairs, then room for the queries).
        vocab_size: Token ids; keys use [1, vocab_size / 2), so vocab_size / 2 - 1 >= num_pairs.
        num_train: Training sequences.
        num_val: Validation sequences.
        num_test: Test sequences.
        batch_size: Sequences per batch.
        seed: Seed of the sequences (train, val and test drawn in that order).
    """

    def __init__(
        self,
        num_pairs: PositiveInt = 8,
        seq_len: Annotated[int, Ge(3)] = 64,
        vocab_size: Annotated[int, Ge(4)] = 128,
        num_train: PositiveInt = 20000,
        num_val: PositiveInt = 500,
        num_test: PositiveInt = 1000,
        batch_size: PositiveInt = 64,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if seq_len < 3 * num_pairs:
            raise ValueError(f"seq_len must be >= 3 * num_pairs = {3 * num_pairs}, got {seq_len}")
        if vocab_size // 2 - 1 < num_pairs:
            raise ValueError(f"vocab_size must leave num_pairs = {num_pairs} distinct keys in [1, vocab_size / 2), "
                             f"so >= {2 * num_pairs + 2}, got {vocab_size}")
        self.num_pairs, self.seq_len, self.vocab_size, self.seed = num_pairs, seq_len, vocab_size, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        return {split: mqar_sequences(rng, count, self.seq_len, self.vocab_size, self.num_pairs)
                for split, count in self.sizes.items()}

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which the `language_modeling` task checks against the model."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}
