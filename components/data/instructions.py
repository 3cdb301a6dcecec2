"""Instruction-tuning data from a local JSON-lines file, as causal-LM windows with the loss on the
response only (paper-scale lora_reeval: MetaMathQA-style `query` / `response` pairs)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from components.data.base import Arrays, ArrayDataModule, local_path
from components.types import PositiveInt, ProperFraction
from framework.extras import missing

IGNORE = -100  # the label cross-entropy skips (torch's default ignore_index)


def response_windows(prompts: list[list[int]], responses: list[list[int]], seq_len: int, pad_id: int) -> Arrays:
    """Next-token windows of prompt + response: x (N, seq_len) the first seq_len tokens (padded
    with `pad_id`), y (N, seq_len) the token after each position, IGNORE where that token belongs
    to the prompt or is padding: the loss and metrics count response tokens only."""
    x = np.full((len(prompts), seq_len), pad_id, dtype=np.int64)
    y = np.full((len(prompts), seq_len), IGNORE, dtype=np.int64)
    for i, (prompt, response) in enumerate(zip(prompts, responses)):
        tokens = (list(prompt) + list(response))[: seq_len + 1]
        x[i, : len(tokens) - 1] = tokens[:-1]
        targets = np.asarray(tokens[1:], dtype=np.int64)
        targets[: max(len(prompt) - 1, 0)] = IGNORE  # positions whose next token is still the prompt
        y[i, : len(targets)] = targets
    return {"x": x, "y": y}


class InstructionJSONL(ArrayDataModule):
    """Prompt/response pairs from a local JSON-lines file, tokenized with a local Hugging Face
    checkpoint's tokenizer (`transformers`, `local_files_only`): each line's
    `template.format(prompt=...)` then its response and the EOS token make one window of `seq_len`
    tokens (longer ones are cut); the labels are the next tokens of the response only. Rows are
    split into train/val/test with `split_seed`. A missing file or tokenizer folder fails at
    construction, saying which and how to provide it.

    Args:
        path: The .jsonl file; None reads the environment variable named by `env`.
        env: Environment variable holding the file when `path` is None.
        tokenizer: The checkpoint folder with the tokenizer files; None reads `tokenizer_env`.
        tokenizer_env: Environment variable holding that folder when `tokenizer` is None.
        prompt_key: The field of a line holding the instruction.
        response_key: The field holding the answer.
        template: How the prompt is written before the response ('{prompt}' is replaced).
        seq_len: Tokens per window.
        max_examples: Keep the first max_examples lines (None: all).

    Plus the base data module's batch_size, val_fraction, test_fraction, split_seed.
    """

    def __init__(
        self,
        path: str | None = None,
        env: str = "EXPSPEC_INSTRUCTIONS",
        tokenizer: str | None = None,
        tokenizer_env: str = "EXPSPEC_LM_DIR",
        prompt_key: str = "query",
        response_key: str = "response",
        template: str = "{prompt}\n",
        seq_len: PositiveInt = 512,
        max_examples: PositiveInt | None = None,
        batch_size: PositiveInt = 8,
        val_fraction: ProperFraction = 0.01,
        test_fraction: ProperFraction = 0.01,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        self.path = local_path("instruction_jsonl", "data.path", path, env, "instruction file (.jsonl)")
        self.tokenizer_dir = local_path("instruction_jsonl", "data.tokenizer", tokenizer, tokenizer_env,
                                        "tokenizer folder", folder=True)
        self.prompt_key, self.response_key, self.template = prompt_key, response_key, template
        self.seq_len, self.max_examples = seq_len, max_examples
        self._tokenizer: Any = None

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            try:
                from transformers import AutoTokenizer
            except ImportError as error:
                raise ImportError(missing("transformers", "instruction_jsonl")) from error
            self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir, local_files_only=True)
        return self._tokenizer

    def rows(self) -> list[dict[str, Any]]:
        """The file's records (the first max_examples), each checked for the two fields."""
        rows = []
        with open(self.path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                missing = [k for k in (self.prompt_key, self.response_key) if k not in row]
                if missing:
                    raise ValueError(f"{self.path}:{number}: no field {missing[0]!r} (fields: {sorted(row)})")
                rows.append(row)
                if self.max_examples and len(rows) == self.max_examples:
                    break
        return rows

    def load(self) -> Arrays:
        tok, rows = self.tokenizer, self.rows()
        prompts = [tok(self.template.format(prompt=r[self.prompt_key]), add_special_tokens=False)["input_ids"] for r in rows]
        responses = [tok(str(r[self.response_key]), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                     for r in rows]
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return response_windows(prompts, responses, self.seq_len, pad)

    def info(self) -> dict[str, int]:
        return {"vocab_size": len(self.tokenizer), "seq_len": self.seq_len}
