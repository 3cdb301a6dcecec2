"""Paper scale of polar_vbll: multiple-choice commonsense questions (BoolQ, PIQA, ARC, OBQA, WinoGrande,
...) from a local JSON-lines file as a classification task, and a causal LM read as a feature
extractor: the last prompt token's final hidden state, fed to a head (deterministic, `vbll_head`
or `laplace_head`), the Bayesian-last-layer setting of PoLAR-VBLL and of Laplace-LoRA.

`multiple_choice_jsonl`: each line {question, choices: [..], label} (label an index, or a letter
A, B, ...) becomes the prompt `template` filled with the question and the lettered choices; x is
its token ids (N, seq_len), cut from the left, right-padded with PAD = -1 (no token); y the
answer's index. Questions with fewer choices than `num_choices` keep their answer in range.
`lm_last_token_classifier`: x -> base LM (any model node with `.lm`, e.g. `pretrained_causal_lm`,
possibly adapted by `polar_adapter` / `peft_lora`) -> final-norm hidden state at the last real
token (B, d_model) -> head. A missing file, tokenizer or checkpoint fails at construction, naming
it; nothing is downloaded.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch
from torch import nn

from components.data.base import Arrays, ArrayDataModule, local_path
from components.kinds import Model
from components.types import PositiveInt, ProperFraction
from framework.extras import missing

PAD = -1  # no token: right padding of x; the classifier reads the last position before it
LETTERS = "ABCDEFGHIJ"


def choice_prompt(template: str, question: str, choices: list[str]) -> str:
    """The template with {question} and {choices} ("A) first\\nB) second ...") filled in."""
    lettered = "\n".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    return template.format(question=question, choices=lettered)


def right_padded(rows: list[list[int]], seq_len: int) -> np.ndarray:
    """Token lists as (N, seq_len), the last seq_len tokens of each, right-padded with PAD."""
    x = np.full((len(rows), seq_len), PAD, dtype=np.int64)
    for i, tokens in enumerate(rows):
        kept = list(tokens)[-seq_len:]
        x[i, : len(kept)] = kept
    return x


class MultipleChoiceJSONL(ArrayDataModule):
    """Multiple-choice questions from a local JSON-lines file, as token ids and answer indices.

    Args:
        path: The .jsonl file; None reads the environment variable named by `env`.
        env: Environment variable holding the file when `path` is None.
        tokenizer: The checkpoint folder with the tokenizer files; None reads `tokenizer_env`.
        tokenizer_env: Environment variable holding that folder when `tokenizer` is None.
        question_key, choices_key, label_key: The fields of a line.
        num_choices: The number of classes (the most choices a question has).
        template: The prompt, with {question} and {choices}.
        seq_len: Tokens kept per prompt (its end).
        max_examples: Keep the first max_examples lines (None: all).

    Plus the base data module's batch_size, val_fraction, test_fraction, split_seed.
    """

    def __init__(
        self,
        path: str | None = None,
        env: str = "EXPSPEC_CHOICES",
        tokenizer: str | None = None,
        tokenizer_env: str = "EXPSPEC_LM_DIR",
        question_key: str = "question",
        choices_key: str = "choices",
        label_key: str = "label",
        num_choices: PositiveInt = 4,
        template: str = "Question: {question}\n{choices}\nAnswer:",
        seq_len: PositiveInt = 256,
        max_examples: PositiveInt | None = None,
        batch_size: PositiveInt = 8,
        val_fraction: ProperFraction = 0.1,
        test_fraction: ProperFraction = 0.2,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        self.path = local_path("multiple_choice_jsonl", "data.path", path, env, "multiple-choice file (.jsonl)")
        self.tokenizer_dir = local_path("multiple_choice_jsonl", "data.tokenizer", tokenizer, tokenizer_env,
                                        "tokenizer folder", folder=True)
        self.keys = (question_key, choices_key, label_key)
        self.num_choices, self.template, self.seq_len, self.max_examples = num_choices, template, seq_len, max_examples

    def rows(self) -> list[tuple[str, list[str], int]]:
        """(question, choices, answer index) of each line, checked."""
        question, choices, label = self.keys
        out = []
        with open(self.path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                absent = [k for k in self.keys if k not in row]
                if absent:
                    raise ValueError(f"{self.path}:{number}: no field {absent[0]!r} (fields: {sorted(row)})")
                answer = row[label]
                index = LETTERS.index(answer.strip().upper()) if isinstance(answer, str) else int(answer)
                if not 0 <= index < min(len(row[choices]), self.num_choices):
                    raise ValueError(f"{self.path}:{number}: answer {answer!r} is not one of its "
                                     f"{len(row[choices])} choices (num_choices {self.num_choices})")
                out.append((str(row[question]), [str(c) for c in row[choices]], index))
                if self.max_examples and len(out) == self.max_examples:
                    break
        return out

    def load(self) -> Arrays:
        try:
            from transformers import AutoTokenizer
        except ImportError as error:
            raise ImportError(missing("transformers", "multiple_choice_jsonl")) from error
        tok = AutoTokenizer.from_pretrained(self.tokenizer_dir, local_files_only=True)
        rows = self.rows()
        ids = [tok(choice_prompt(self.template, q, c), add_special_tokens=False)["input_ids"] for q, c, _ in rows]
        return {"x": right_padded(ids, self.seq_len), "y": np.asarray([a for _, _, a in rows], dtype=np.int64)}

    def info(self) -> dict[str, int]:
        return {"num_classes": self.num_choices}


class LastTokenClassifier(nn.Module):
    """Token ids (B, L), right-padded with PAD -> head(final hidden state at the last real token).

    Args:
        base: The causal LM (a model node with `.lm`, a transformers causal LM), possibly adapted.
        head: The classification head (a model node reading d_model features).
    """

    def __init__(self, base: Model, head: Model) -> None:
        super().__init__()
        if not hasattr(base, "lm"):
            raise ValueError(f"base must hold a transformers causal LM as `.lm` (pretrained_causal_lm), got "
                             f"{type(base).__name__}")
        self.base, self.head = base, head

    def features(self, x: torch.Tensor) -> torch.Tensor:
        mask = x != PAD
        last = mask.long().sum(1).clamp_min(1) - 1
        hidden = self.base.lm.model(input_ids=x.clamp_min(0), attention_mask=mask.long()).last_hidden_state
        return hidden[torch.arange(len(x), device=x.device), last].float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))
