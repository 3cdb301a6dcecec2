"""True/false statements about a synthetic knowledge base, for a causal LM to judge.

Seed paper: latent_debate (specs/latent_debate/README.md). The knowledge base maps each of
`num_entities` entities and `num_relations` relations to one of `num_values` values, drawn
uniformly from `seed`. A statement is the four tokens `e r v ?`; its answer, the target at the
`?` position, is the token TRUE when v is the fact for (e, r), else FALSE (then v is a uniformly
drawn other value). Half the statements are true.

What makes a small model err (its "hallucinations"): training statements draw entities with a
long tail, P(e) proportional to (e + 1)^-zipf, so the model sees rare entities' facts a few times
or never; a `noise` share of training answers is flipped (noisy facts). Val and test statements
draw entities uniformly and carry clean answers, so their errors are the model's own.

Paper scale: `true_false_statements` reads such statements from a local CSV file, as prompts
for a pretrained LM (below).

Token ids: entities [0, E), relations [E, E + R), values [E + R, E + R + V), then `?`, TRUE and
FALSE; vocab_size = E + R + V + 3. With `value_targets` (the default), a training statement
answered TRUE is also a fact to recite: its value is the target after the relation, so next-token
prediction teaches the knowledge base itself and the answer then checks v against it.

Batches are {"x": (B, 4), "y": (B, 4), "label": (B,)}: y is -100 (skipped by `cross_entropy` and
`masked_accuracy`) except at the last position (and, for recited values, after the relation);
label is 1 for a TRUE answer, 0 for FALSE (the trained answer, noise included, on train).
"""

from __future__ import annotations

import csv
from typing import Annotated, Any

import numpy as np
from annotated_types import Ge

from components.data.base import ArrayDataModule, Arrays, local_path
from components.types import NonNegativeFloat, PositiveInt, ProperFraction

IGNORE = -100  # no target at this position (torch's default ignore_index)
SEQ_LEN = 4    # e r v ?


def answer_tokens(num_entities: int, num_relations: int, num_values: int) -> tuple[int, int, int]:
    """The ids of `?`, TRUE and FALSE for a knowledge base of these sizes."""
    ask = num_entities + num_relations + num_values
    return ask, ask + 1, ask + 2


def statements(rng: np.random.Generator, facts: np.ndarray, num_values: int, count: int,
               entity_p: np.ndarray | None, noise: float, value_targets: bool = False) -> Arrays:
    """`count` statements (module docstring) about the fact table `facts` (E, R) of value indices
    in [0, num_values); entities drawn with probabilities `entity_p` (None: uniform); a `noise`
    share of answers flipped; with `value_targets`, a statement answered TRUE also targets its
    value after the relation (position 1)."""
    num_entities, num_relations = facts.shape
    ask, true_id, false_id = answer_tokens(num_entities, num_relations, num_values)
    e = rng.choice(num_entities, size=count, p=entity_p)
    r = rng.integers(num_relations, size=count)
    truth = rng.random(count) < 0.5
    shift = rng.integers(1, num_values, size=count)  # a wrong value: the fact shifted by 1..V-1
    v = np.where(truth, facts[e, r], (facts[e, r] + shift) % num_values)
    label = truth ^ (rng.random(count) < noise)
    x = np.stack([e, num_entities + r, num_entities + num_relations + v, np.full(count, ask)], axis=1)
    y = np.full((count, SEQ_LEN), IGNORE, dtype=np.int64)
    y[:, -1] = np.where(label, true_id, false_id)
    if value_targets:
        y[:, 1] = np.where(label, x[:, 2], IGNORE)
    return {"x": x.astype(np.int64), "y": y, "label": label.astype(np.int64)}


class TrueFalseKnowledgeBase(ArrayDataModule):
    """True/false statements over a synthetic knowledge base (module docstring).

    Args:
        num_entities: Entities E.
        num_relations: Relations R.
        num_values: Values V a relation can take (at least 2, so a false statement exists).
        zipf: Exponent of the long tail of training entities (0: uniform).
        noise: Share of training answers flipped.
        value_targets: Train statements answered TRUE also target their value (module docstring).
        num_train: Training statements.
        num_val: Validation statements (uniform entities, clean answers).
        num_test: Test statements (uniform entities, clean answers).
        batch_size: Statements per batch.
        seed: Seed of the knowledge base and of the statements (train, val, test drawn in order).
    """

    def __init__(
        self,
        num_entities: PositiveInt = 200,
        num_relations: PositiveInt = 5,
        num_values: Annotated[int, Ge(2)] = 20,
        zipf: NonNegativeFloat = 1.0,
        noise: ProperFraction = 0.05,
        value_targets: bool = True,
        num_train: PositiveInt = 20000,
        num_val: PositiveInt = 2000,
        num_test: PositiveInt = 2000,
        batch_size: PositiveInt = 64,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        self.num_entities, self.num_relations, self.num_values = num_entities, num_relations, num_values
        self.zipf, self.noise, self.value_targets, self.seed = zipf, noise, value_targets, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}

    def facts(self) -> np.ndarray:
        """The knowledge base: (E, R) value indices, a function of `seed` alone."""
        shape = (self.num_entities, self.num_relations)
        return np.random.default_rng([self.seed, 0]).integers(self.num_values, size=shape)

    def entity_p(self) -> np.ndarray:
        """Training probabilities of the entities: (e + 1)^-zipf, normalized."""
        weights = np.arange(1, self.num_entities + 1, dtype=np.float64) ** -self.zipf
        return weights / weights.sum()

    def load(self) -> dict[str, Arrays]:
        facts, rng = self.facts(), np.random.default_rng([self.seed, 1])
        return {
            "train": statements(rng, facts, self.num_values, self.sizes["train"], self.entity_p(), self.noise,
                                self.value_targets),
            "val": statements(rng, facts, self.num_values, self.sizes["val"], None, 0.0),
            "test": statements(rng, facts, self.num_values, self.sizes["test"], None, 0.0),
        }

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which the `language_modeling` task checks against the model."""
        return {"vocab_size": self.num_entities + self.num_relations + self.num_values + 3, "seq_len": SEQ_LEN}


LABELS = {"true": 1, "1": 1, "yes": 1, "false": 0, "0": 0, "no": 0}


def prompt_rows(prompts: list[list[int]], labels: list[int], pad_id: int, true_id: int, false_id: int) -> Arrays:
    """Left-padded prompts as statements: x (N, L) with `pad_id` before each prompt, attention_mask
    (N, L) 1 on the prompt, y (N, L) IGNORE except the last position (the answer token), label (N,)."""
    length = max(len(p) for p in prompts)
    x = np.full((len(prompts), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(prompts), length), dtype=np.int64)
    for i, prompt in enumerate(prompts):
        x[i, length - len(prompt):], mask[i, length - len(prompt):] = prompt, 1
    y = np.full((len(prompts), length), IGNORE, dtype=np.int64)
    label = np.asarray(labels, dtype=np.int64)
    y[:, -1] = np.where(label == 1, true_id, false_id)
    return {"x": x, "attention_mask": mask, "y": y, "label": label}


class TrueFalseStatementsFile(ArrayDataModule):
    """True/false statements from a local CSV file (paper scale: Common Claim, CounterFact,
    Company, ... as `statement,label` rows), as prompts for a pretrained LM whose next token
    answers: `template.format(statement=...)`, tokenized by a local Hugging Face tokenizer
    (`local_files_only`), left-padded (with an attention_mask) so that every prompt ends at the
    last position. The answer tokens are the first tokens of `true_word` and `false_word`. A label
    is true/false, 1/0 or yes/no. A missing file or tokenizer folder fails at construction,
    saying which and how to provide it.

    Args:
        path: The CSV file (header with `statement` and `label`); None reads `env`.
        env: Environment variable holding the file when `path` is None.
        tokenizer: The checkpoint folder with the tokenizer files; None reads `tokenizer_env`.
        tokenizer_env: Environment variable holding that folder when `tokenizer` is None.
        template: The prompt ('{statement}' is replaced).
        true_word: The answer word for TRUE (its first token is the answer token).
        false_word: The answer word for FALSE.
        max_examples: Keep the first max_examples rows (None: all).

    Plus the base data module's batch_size, val_fraction, test_fraction, split_seed (latent_debate
    fits its probes on val and reports on test).
    """

    def __init__(
        self,
        path: str | None = None,
        env: str = "EXPSPEC_TF_STATEMENTS",
        tokenizer: str | None = None,
        tokenizer_env: str = "EXPSPEC_LM_DIR",
        template: str = "Is the following statement true or false?\n{statement}\nAnswer:",
        true_word: str = " True",
        false_word: str = " False",
        max_examples: PositiveInt | None = None,
        batch_size: PositiveInt = 16,
        val_fraction: ProperFraction = 0.45,
        test_fraction: ProperFraction = 0.45,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        self.path = local_path("true_false_statements", "data.path", path, env, "statements file (.csv)")
        self.tokenizer_dir = local_path("true_false_statements", "data.tokenizer", tokenizer, tokenizer_env,
                                        "tokenizer folder", folder=True)
        self.template, self.words, self.max_examples = template, (true_word, false_word), max_examples
        self._tokenizer: Any = None

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir, local_files_only=True)
        return self._tokenizer

    def rows(self) -> tuple[list[str], list[int]]:
        """The file's statements and 0/1 labels (the first max_examples)."""
        statements_, labels = [], []
        with open(self.path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [k for k in ("statement", "label") if k not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"{self.path}:1: no column {missing[0]!r} (columns: {reader.fieldnames})")
            for number, row in enumerate(reader, 2):
                label = LABELS.get(row["label"].strip().lower())
                if label is None:
                    raise ValueError(f"{self.path}:{number}: label {row['label']!r} is none of {sorted(LABELS)}")
                statements_.append(row["statement"])
                labels.append(label)
                if self.max_examples and len(labels) == self.max_examples:
                    break
        return statements_, labels

    def load(self) -> Arrays:
        tok = self.tokenizer
        true_id, false_id = (tok(word, add_special_tokens=False)["input_ids"][0] for word in self.words)
        if true_id == false_id:
            raise ValueError(f"true_word {self.words[0]!r} and false_word {self.words[1]!r} start with the same token")
        texts, labels = self.rows()
        prompts = [tok(self.template.format(statement=s))["input_ids"] for s in texts]
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return prompt_rows(prompts, labels, pad, true_id, false_id)

    def info(self) -> dict[str, int]:
        return {"vocab_size": len(self.tokenizer)}
