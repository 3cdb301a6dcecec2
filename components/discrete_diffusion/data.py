"""A synthetic language with a planted token hierarchy, for LHDLM (NOTES: `synthetic_hierarchical_language`).

V = num_content_clusters x tokens_per_cluster content tokens plus num_function_tokens function
tokens. Content cluster c owns ids c * tokens_per_cluster ...; the function tokens come last and
form cluster num_content_clusters. A sequence follows a hidden Markov chain over the content
clusters (uniform start; each next position keeps the cluster with probability `stay_prob`, else
moves to one of the others uniformly). Each position emits a function token with probability
`function_rate` (uniform over them: function tokens appear in every context), else a content
token of the current cluster, Zipfian within the cluster (p proportional to 1 / rank). So the
cluster of a content token is predictable from its neighbours while its identity inside the
cluster is not: the structure a learned hierarchy should find.

Batches: {"x": token ids (B, L)} (no targets: a diffusion LM models x itself).
`token_clusters` holds the true cluster of every token, `function_cluster` the function tokens'.
"""

from __future__ import annotations

import numpy as np

from components.data.base import ArrayDataModule, Arrays
from components.types import PositiveInt, Probability, ProperFraction


class HierarchicalLanguage(ArrayDataModule):
    """Sequences of the planted-hierarchy language (module docstring).

    Args:
        num_content_clusters: Content clusters (the HMM's states).
        tokens_per_cluster: Tokens of each content cluster.
        num_function_tokens: Function tokens (one more cluster, in every context).
        function_rate: Probability that a position holds a function token.
        stay_prob: Probability that the next position keeps the content cluster.
        seq_len: Tokens per sequence.
        num_train: Training sequences.
        num_val: Validation sequences.
        num_test: Test sequences.
        batch_size: Sequences per batch.
        seed: Seed of the sequences (train, val, test drawn in that order).
    """

    def __init__(
        self,
        num_content_clusters: PositiveInt = 5,
        tokens_per_cluster: PositiveInt = 8,
        num_function_tokens: PositiveInt = 8,
        function_rate: ProperFraction = 0.25,
        stay_prob: Probability = 0.9,
        seq_len: PositiveInt = 32,
        num_train: PositiveInt = 32000,
        num_val: PositiveInt = 500,
        num_test: PositiveInt = 1000,
        batch_size: PositiveInt = 64,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if num_content_clusters < 2:
            raise ValueError(f"num_content_clusters must be >= 2, got {num_content_clusters}")
        self.num_content_clusters, self.tokens_per_cluster = num_content_clusters, tokens_per_cluster
        self.num_function_tokens, self.function_rate, self.stay_prob = num_function_tokens, function_rate, stay_prob
        self.seq_len, self.seed = seq_len, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}
        self.function_cluster = num_content_clusters
        self.vocab_size = num_content_clusters * tokens_per_cluster + num_function_tokens
        content = np.repeat(np.arange(num_content_clusters), tokens_per_cluster)
        self.token_clusters = np.concatenate([content, np.full(num_function_tokens, num_content_clusters)])

    def sequences(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """count sequences (count, seq_len) of token ids."""
        c, length = self.num_content_clusters, self.seq_len
        clusters = np.empty((count, length), dtype=np.int64)
        clusters[:, 0] = rng.integers(c, size=count)
        for i in range(1, length):
            move = rng.random(count) >= self.stay_prob
            step = rng.integers(1, c, size=count)  # to one of the other clusters, uniformly
            clusters[:, i] = np.where(move, (clusters[:, i - 1] + step) % c, clusters[:, i - 1])
        zipf = 1.0 / np.arange(1, self.tokens_per_cluster + 1)
        rank = rng.choice(self.tokens_per_cluster, size=(count, length), p=zipf / zipf.sum())
        content = clusters * self.tokens_per_cluster + rank
        function = c * self.tokens_per_cluster + rng.integers(self.num_function_tokens, size=(count, length))
        return np.where(rng.random((count, length)) < self.function_rate, function, content)

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        return {split: {"x": self.sequences(rng, count)} for split, count in self.sizes.items()}

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which the diffusion task checks against the model."""
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}
