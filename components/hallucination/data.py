"""Tokenized responses with per-token hallucination labels from a local JSON-lines file: the data of
tokenhd at paper scale (the TokenHD training data, tokenized with the detector's tokenizer).

Each line is one response: {"input_ids": [int, ...], "labels": [float | null, ...]} of equal
length, a label in [0, 1] per token (soft labels allowed: the TokenHD data's are an ensemble of
critics) and null on the tokens not scored (the prompt). Responses are right-padded with
`pad_id` to `max_len` (longer ones are cut there); padding is unscored. A causal model's scores of
the real tokens do not depend on right padding, so no attention mask is needed.

Batches match `corrupted_facts`: {"x": ids (B, max_len) long, "y": next ids (-100 on padding and at
the end), "labels": (B, max_len) float, "mask": (B, max_len) scored tokens}. Nothing is downloaded:
with the file missing, construction fails at once naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from components.data.base import ArrayDataModule, Arrays
from components.local_assets import local_path
from components.types import NonNegativeInt, PositiveInt, ProperFraction

IGNORE = -100


def read_token_labels(path: Path, max_len: int, pad_id: int) -> Arrays:
    """The responses of a JSON-lines file (module docstring) as padded arrays."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{path} holds no responses")
    x = np.full((len(rows), max_len), pad_id, dtype=np.int64)
    labels = np.zeros((len(rows), max_len), dtype=np.float32)
    mask = np.zeros((len(rows), max_len), dtype=bool)
    for i, row in enumerate(rows):
        ids, row_labels = row.get("input_ids"), row.get("labels")
        if not isinstance(ids, list) or not isinstance(row_labels, list) or len(ids) != len(row_labels):
            raise ValueError(f"{path}:{i + 1}: needs 'input_ids' and 'labels' lists of equal length")
        n = min(len(ids), max_len)
        x[i, :n] = ids[:n]
        scored = [label is not None for label in row_labels[:n]]
        mask[i, :n] = scored
        labels[i, :n] = [label if label is not None else 0.0 for label in row_labels[:n]]
        if not all(0.0 <= v <= 1.0 for v in labels[i, :n]):
            raise ValueError(f"{path}:{i + 1}: labels must be in [0, 1] or null")
    real = np.zeros_like(mask)
    for i, row in enumerate(rows):
        real[i, : min(len(row["input_ids"]), max_len)] = True
    y = np.where(np.roll(real, -1, axis=1), np.roll(x, -1, axis=1), IGNORE)
    y[:, -1] = IGNORE
    return {"x": x, "y": y, "labels": labels, "mask": mask}


class TokenLabelFile(ArrayDataModule):
    """Responses with per-token labels from a local JSON-lines file (module docstring).

    Args:
        path: The .jsonl file; None reads the variable named by `env`.
        env: Environment variable holding the file when `path` is None.
        max_len: Tokens per response after padding or cutting.
        vocab_size: The tokenizer's vocabulary size (reported for the model checks).
        pad_id: Token id of the padding.
        batch_size: Responses per batch.
        val_fraction: Share held out for validation (the F1 threshold is chosen there).
        test_fraction: Share held out for test.
        split_seed: Seed of the split.
    """

    def __init__(
        self,
        path: str | None = None,
        env: str = "EXPSPEC_TOKEN_LABELS",
        max_len: PositiveInt = 2048,
        vocab_size: PositiveInt = 151936,
        pad_id: NonNegativeInt = 0,
        batch_size: PositiveInt = 8,
        val_fraction: ProperFraction = 0.05,
        test_fraction: ProperFraction = 0.05,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        file = local_path("token_label_file", "data.path", path, env, 'file of token-labelled responses (a .jsonl '
                          'of {"input_ids": [...], "labels": [...]} per line)')
        self.path, self.max_len, self.vocab_size, self.pad_id = Path(file), max_len, vocab_size, pad_id

    def load(self) -> Arrays:
        return read_token_labels(self.path, self.max_len, self.pad_id)

    def info(self) -> dict[str, int]:
        return {"vocab_size": self.vocab_size, "seq_len": self.max_len}
