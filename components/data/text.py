"""Token sequences for language models: characters of English text that ships with Python, or
pre-tokenized token ids from a local file.

Both modules return batches {"x": (B, L) long, "y": (B, L) long} with y the next token of x, and
expose `split(name)` (whole splits, as the in-memory modules do), which `activation_buffer` uses to
read a frozen model's activations over the same text.

Splits are contiguous pieces of one token stream (train first, then val, then test), so no
validation or test text ever appears in training windows. Each split is cut into non-overlapping
windows of seq_len + 1 tokens (x = window[:-1], y = window[1:]); a tail shorter than that is
dropped.

Used by `sae_replay` (stage one: a tiny character LM; paper scale: Llama-3.1 / Qwen3 token ids),
see specs/sae_replay/README.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from annotated_types import Ge

from components.data.base import ArrayDataModule, Arrays
from components.types import OpenFraction, PositiveInt


def pydoc_topics_text() -> str:
    """Python's own help topics (`pydoc_data.topics`, ~465k characters of English prose and
    grammar excerpts in the CPython 3.11 build used here), topics in sorted key order."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def _windows(ids: np.ndarray, seq_len: int) -> Arrays:
    n = (len(ids) - 1) // seq_len
    if n < 1:
        raise ValueError(f"a split of {len(ids)} tokens holds no window of seq_len + 1 = {seq_len + 1} tokens")
    idx = np.arange(n)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
    windows = ids[idx]
    return {"x": windows[:, :-1], "y": windows[:, 1:]}


def contiguous_splits(ids: np.ndarray, seq_len: int, val_fraction: float, test_fraction: float) -> dict[str, Arrays]:
    """train | val | test as consecutive pieces of `ids`, each cut into windows."""
    n = len(ids)
    n_val, n_test = int(n * val_fraction), int(n * test_fraction)
    n_train = n - n_val - n_test
    return {
        "train": _windows(ids[:n_train], seq_len),
        "val": _windows(ids[n_train : n_train + n_val], seq_len),
        "test": _windows(ids[n_train + n_val :], seq_len),
    }


class _TokenData(ArrayDataModule):
    """Token windows in contiguous train | val | test pieces. The subclasses' signatures state the
    ranges (seq_len >= 1, each fraction in (0, 1): every split needs tokens)."""

    def __init__(self, seq_len: int, batch_size: int, val_fraction: float, test_fraction: float) -> None:
        # standardize=False: x holds token ids, not features.
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         standardize=False)
        self.seq_len = seq_len

    def tokens(self) -> np.ndarray:
        raise NotImplementedError

    def load(self) -> dict[str, Arrays]:
        return contiguous_splits(self.tokens(), self.seq_len, self.val_fraction, self.test_fraction)


class CharText(_TokenData):
    """Character-level text: one token per Unicode character.

    The vocabulary is the sorted set of characters of the whole corpus (deterministic for a given
    text; every character of val and test is in it). `vocab` holds it, `decode(ids)` maps back.

    Args:
        corpus: "pydoc_topics" (Python's help topics, ships with Python) or "file" (a UTF-8 text
            file at `path`).
        path: The text file for corpus "file".
        seq_len: Tokens per training window.
        batch_size: Windows per batch.
        val_fraction: Share of the characters (after train) held out for validation.
        test_fraction: Share of the characters (at the end) held out for test.
        max_chars: Keep only the first max_chars characters (None: all).
    """

    def __init__(
        self,
        corpus: Literal["pydoc_topics", "file"] = "pydoc_topics",
        path: str | None = None,
        seq_len: PositiveInt = 64,
        batch_size: PositiveInt = 32,
        val_fraction: OpenFraction = 0.1,
        test_fraction: OpenFraction = 0.1,
        max_chars: Annotated[int, Ge(2)] | None = None,
    ) -> None:
        if corpus not in ("pydoc_topics", "file"):
            raise ValueError(f"corpus must be 'pydoc_topics' or 'file', got '{corpus}'")
        if (corpus == "file") != (path is not None):
            raise ValueError(f"path must be given exactly when corpus is 'file', got corpus='{corpus}', path={path!r}")
        super().__init__(seq_len, batch_size, val_fraction, test_fraction)
        self.corpus, self.path, self.max_chars = corpus, path, max_chars
        self._vocab: list[str] | None = None

    def text(self) -> str:
        if self.corpus == "pydoc_topics":
            text = pydoc_topics_text()
        else:
            file = Path(self.path)  # type: ignore[arg-type]
            if not file.is_file():
                raise FileNotFoundError(f"char_text: text file not found: {file} (data.path)")
            text = file.read_text(encoding="utf-8")
        return text[: self.max_chars] if self.max_chars else text

    @property
    def vocab(self) -> list[str]:
        if self._vocab is None:
            self._vocab = sorted(set(self.text()))
        return self._vocab

    def tokens(self) -> np.ndarray:
        text = self.text()
        self._vocab = sorted(set(text))
        index = {c: i for i, c in enumerate(self._vocab)}
        return np.fromiter((index[c] for c in text), dtype=np.int64, count=len(text))

    def decode(self, ids: list[int]) -> str:
        return "".join(self.vocab[i] for i in ids)

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which the `language_modeling` task checks against the model."""
        return {"vocab_size": len(self.vocab), "seq_len": self.seq_len}


DTYPES = ("uint8", "uint16", "uint32", "int32", "int64")  # uint8: raw bytes (enwik8), vocab_size 256


class TokenFile(_TokenData):
    """Pre-tokenized text: a 1-D array of token ids in a `.npy` file, or raw ids in a `.bin` file
    (nanoGPT's format). Tokenize the corpus once with the model's own tokenizer; nothing is
    downloaded here.

    Args:
        path: The token file; None reads the environment variable named by `env`.
        env: Environment variable holding the path when `path` is None.
        vocab_size: The tokenizer's vocabulary size (ids must be below it).
        seq_len: Tokens per window.
        batch_size: Windows per batch.
        val_fraction: Share of the tokens (after train) held out for validation.
        test_fraction: Share of the tokens (at the end) held out for test.
        dtype: Element type of a raw `.bin` file.
        max_tokens: Keep only the first max_tokens ids (None: all).
    """

    def __init__(
        self,
        vocab_size: Annotated[int, Ge(2)],
        path: str | None = None,
        env: str = "EXPSPEC_TOKENS",
        seq_len: PositiveInt = 1024,
        batch_size: PositiveInt = 8,
        val_fraction: OpenFraction = 0.01,
        test_fraction: OpenFraction = 0.01,
        dtype: Literal["uint8", "uint16", "uint32", "int32", "int64"] = "uint32",
        max_tokens: PositiveInt | None = None,
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got '{dtype}'")
        super().__init__(seq_len, batch_size, val_fraction, test_fraction)
        resolved = path or os.environ.get(env)
        if not resolved or not Path(resolved).is_file():
            where = f"data.path = {path}" if path else f"${env} = {os.environ.get(env) or '(unset)'}"
            raise FileNotFoundError(
                f"token_file: token ids not found ({where}). Tokenize a text corpus with the model's "
                f"tokenizer into a 1-D .npy (or raw .bin) array of ids and set data.path or ${env}. "
                f"Nothing is downloaded."
            )
        self.path, self.vocab_size, self.dtype, self.max_tokens = resolved, vocab_size, dtype, max_tokens

    def tokens(self) -> np.ndarray:
        if self.path.endswith(".npy"):
            ids = np.load(self.path, mmap_mode="r")
        else:
            ids = np.memmap(self.path, dtype=self.dtype, mode="r")
        ids = np.asarray(ids[: self.max_tokens] if self.max_tokens else ids).astype(np.int64).reshape(-1)
        if len(ids) and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(f"token_file: ids must be in [0, {self.vocab_size}), got [{ids.min()}, {ids.max()}]")
        return ids

    def info(self) -> dict[str, int]:
        return {"vocab_size": self.vocab_size, "seq_len": self.seq_len}
