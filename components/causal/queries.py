"""Interventional queries on random executable SCMs as question -> answer token sequences, with a
complexity curriculum (causim, specs/causim/README.md).

One example: draw an SCM of `num_nodes` nodes (`random_scm`) and one unit of it (its exogenous
values), set one node to a value (do), and ask the value of another node whose depth in the
intervened graph is >= 1 (it needs at least one mechanism applied). The prompt states the unit's
equations, the intervention and the question (`render_code`: 'A=2;C=A+1;B=C+A+0;do(C=0);B?', or
`render_text`); the answer is the target's value, computed by executing the SCM. The loss and the
metrics read the answer tokens only (targets -100 elsewhere, as `mqar`), so `masked_accuracy` is
the share of answers right (one token per answer with the character vocabulary). With
`answer: scratchpad` the answer lists every node the target reads in causal order, name then
value, the target last ('A2C0B2'); only the values are scored (`answer_pieces`), so the accuracy is
the share of scratchpad values right, each predicted from the true earlier ones (teacher forcing).

Complexity levels are node counts (`levels`, e.g. [3, 4, 5]); the training set holds num_train /
len(levels) examples of each. `order` says how one epoch walks it: `curriculum` level by level in
the order of `levels` (shuffled within a level), `anti_curriculum` the reverse, `shuffled` a
uniform permutation (the flat baseline). The three orders see the same examples, hence the same
tokens and the same number of steps; only their order differs. Validation and test examples are
held out: drawn after the training set from the same seed, on SCMs of `test_nodes` nodes, with
num_test / len(test_depths) examples at each query depth in `test_depths`, and any prompt seen in
training dropped. Data volume (`unique_train`): the training set is drawn as above (so the held-out
sets are the same examples), then only the first unique_train / len(levels) examples of each level
are kept and repeated in turn up to num_train / len(levels): fewer distinct examples, the same
number of steps and tokens. A control (`train_values: random`): every scored value of the training
answers is replaced by a uniform draw (from its own generator, so prompts and held-out sets are
unchanged); nothing there can be learned about the mechanisms, and the held-out accuracy stays at
chance. Batches carry "depth" (B,) and "level" (B,) besides "x" and "y", so a task can
report accuracy by depth (`language_modeling_by_group`).

Tokens: by default characters (id 0 pads; printable ASCII 32..126 are ids 1..95, vocab_size 96);
with `tokenizer` (or `tokenizer_env`) the tokenizer of a local Hugging Face checkpoint, as an LLM
is fine-tuned at paper scale (nothing is downloaded; a missing folder fails at construction).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import torch
from annotated_types import Ge, Interval, MinLen
from torch.utils.data import DataLoader, Sampler

from components.data.instructions import IGNORE, response_windows
from components.causal.scm import NAMES, SCM, random_scm, render_code, render_text, unit_equations
from components.data.base import Arrays, ArrayDataModule, ResumableLoader, TensorDictDataset, keep_batch
from components.types import NonNegativeInt, PositiveInt, ProperFraction
from framework.extras import missing

CHAR_VOCAB = 96  # id 0 pads; chr(c) for c in 32..126 is id c - 31
RENDER = {"code": render_code, "text": render_text}
NodeCount = Annotated[int, Interval(ge=2, le=len(NAMES))]  # one name per node


def char_ids(text: str) -> list[int]:
    """Character ids of a printable-ASCII string (0 is left for padding)."""
    ids = [ord(c) - 31 for c in text]
    if any(not 1 <= i < CHAR_VOCAB for i in ids):
        raise ValueError(f"not printable ASCII: {text!r}")
    return ids


def tokenizer_folder(given: str | None, env: str | None) -> str:
    """`given`, else the folder named by the environment variable `env`; a FileNotFoundError that
    says which is missing and how to provide it when that is not a folder (nothing is downloaded)."""
    folder = given or (os.environ.get(env) if env else None)
    if not folder or not Path(folder).is_dir():
        where = f"data.tokenizer = {given}" if given else f"${env} = {os.environ.get(env or '') or '(unset)'}"
        raise FileNotFoundError(f"causal_queries: no local tokenizer folder ({where}). Put a Hugging Face "
                                f"checkpoint folder with its tokenizer files there and set data.tokenizer or "
                                f"${env or 'the variable of data.tokenizer_env'}. Nothing is downloaded.")
    return folder


def draw_query(rng: random.Random, num_nodes: int, num_values: int, max_parents: int,
               root_prob: float) -> tuple[SCM, list, tuple[int, int], int, list[int], int]:
    """One interventional query (module docstring): (scm, the unit's equations, (node, value) set,
    target, every node's value under the do, target's depth). SCMs with no node of depth >= 1 left
    after the do are redrawn."""
    while True:
        scm = random_scm(rng, num_nodes, num_values, max_parents, root_prob)
        node, value = rng.randrange(num_nodes), rng.randrange(num_values)
        depths = scm.depths({node: value})
        targets = [t for t in range(num_nodes) if t != node and depths[t] >= 1]
        if targets:
            break
    u = scm.draw_unit(rng)
    target = rng.choice(targets)
    values = scm.run_unit(u, {node: value})
    return scm, unit_equations(scm, u), (node, value), target, values, depths[target]


def answer_pieces(scm: SCM, do: tuple[int, int], target: int, values: list[int], answer: str) -> list[tuple[str, bool]]:
    """The answer as (text, scored) pieces. `final`: the target's value. `scratchpad`: every node
    the target needs (`SCM.needed`) in causal order, the target last, as name and value ('A2C0B2'
    for B in 'A=2;C=A+1;B=C+A+0;do(C=0);B?'); the names are given (not scored), the values scored."""
    if answer == "final":
        return [(str(values[target]), True)]
    needed = scm.needed(target, {do[0]: do[1]})
    return [piece for i in needed for piece in ((scm.names[i], False), (str(values[i]), True))]

class LevelOrder(Sampler[int]):
    """A curriculum over one epoch: the indices of level 0, then of level 1, ... (`levels[i]` is the
    level of example i; descending reverses it); within a level a permutation drawn from
    (seed, epoch) alone, so a resumed run sees the same order (as `EpochShuffle`)."""

    def __init__(self, levels: torch.Tensor, seed: int, descending: bool = False) -> None:
        self.levels, self.seed, self.descending, self.epoch = levels, seed, descending, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed((self.seed * 100_003 + self.epoch) % (1 << 63))
        order = []
        for level in sorted(set(self.levels.tolist()), reverse=self.descending):
            members = torch.nonzero(self.levels == level).flatten()
            order.append(members[torch.randperm(len(members), generator=generator)])
        return iter(torch.cat(order).tolist())

    def __len__(self) -> int:
        return len(self.levels)


class CausalQueries(ArrayDataModule):
    """Interventional queries on random SCMs, answers read by execution (module docstring).

    Args:
        levels: Node counts of the training SCMs, easiest first (the curriculum's order).
        order: How an epoch walks the training set: curriculum, anti_curriculum or shuffled (flat).
        num_train: Training examples, an equal share per level.
        test_nodes: Node count of the held-out validation and test SCMs.
        test_depths: Query depths of the held-out examples, an equal share each.
        num_val: Validation examples.
        num_test: Test examples.
        num_values: Domain size m of every variable (arithmetic mod m).
        max_parents: Most parents a node has.
        root_prob: Chance that a node after the first is a root (below 1: a query needs a non-root).
        rendering: code ('A=2;C=A+1;do(C=0);B?') or text (English sentences).
        unique_train: Distinct training examples (None: num_train); an equal share per level, each
            repeated in turn up to num_train (module docstring: data volume at equal steps).
        train_values: `true`, or `random`: the training answers' scored values drawn uniformly (a
            control at chance; held-out answers stay true).
        answer: final (the target's value) or scratchpad (every needed node's name and value in
            causal order, the target last; the values are scored, the names given: `answer_pieces`).
        seq_len: Tokens per example (prompt and answer, right-padded); too short fails, naming the need.
        tokenizer: A local Hugging Face checkpoint folder whose tokenizer to use (None: characters).
        tokenizer_env: Environment variable holding that folder when `tokenizer` is None (None: characters).
        batch_size: Examples per batch.
        seed: Seed of the SCMs and queries (train, then val, then test).
    """

    def __init__(
        self,
        levels: Annotated[list[NodeCount], MinLen(1)] = [3, 4, 5],  # noqa: B006 (JSON-typed default, never mutated)
        order: Literal["curriculum", "anti_curriculum", "shuffled"] = "curriculum",
        num_train: PositiveInt = 6000,
        test_nodes: NodeCount = 5,
        test_depths: Annotated[list[PositiveInt], MinLen(1)] = [1, 2, 3],  # noqa: B006
        num_val: PositiveInt = 300,
        num_test: PositiveInt = 900,
        num_values: Annotated[int, Ge(2)] = 3,
        max_parents: PositiveInt = 2,
        root_prob: ProperFraction = 0.2,
        rendering: Literal["code", "text"] = "code",
        answer: Literal["final", "scratchpad"] = "final",
        unique_train: PositiveInt | None = None,
        train_values: Literal["true", "random"] = "true",
        seq_len: PositiveInt = 64,
        tokenizer: str | None = None,
        tokenizer_env: str | None = None,
        batch_size: PositiveInt = 64,
        seed: int = 0,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False, num_workers=num_workers)
        if num_train % len(levels):
            raise ValueError(f"num_train must split equally over the {len(levels)} levels, got {num_train}")
        if num_test % len(test_depths) or num_val % len(test_depths):
            raise ValueError(f"num_val and num_test must split equally over the {len(test_depths)} test_depths, "
                             f"got {num_val} and {num_test}")
        if max(test_depths) >= test_nodes:
            raise ValueError(f"a query depth needs that many nodes above the target: test_depths must be < "
                             f"test_nodes = {test_nodes}, got {max(test_depths)}")
        self.levels, self.order, self.num_train, self.test_nodes = list(levels), order, num_train, test_nodes
        self.test_depths, self.num_val, self.num_test = list(test_depths), num_val, num_test
        self.scm_args = dict(num_values=num_values, max_parents=max_parents, root_prob=root_prob)
        self.render, self.seq_len, self.seed = RENDER[rendering], seq_len, seed
        if unique_train is not None and (unique_train % len(levels) or unique_train > num_train):
            raise ValueError(f"unique_train must split equally over the {len(levels)} levels and be <= num_train "
                             f"({num_train}), got {unique_train}")
        self.answer, self.unique_train, self.train_values = answer, unique_train, train_values
        self.tokenizer_dir = None
        if tokenizer is not None or tokenizer_env is not None:
            self.tokenizer_dir = tokenizer_folder(tokenizer, tokenizer_env)
        self._tokenizer: Any = None

    def encode(self, prompt: str, pieces: list[tuple[str, bool]]) -> tuple[list[int], list[int], list[bool]]:
        """Token ids of a prompt and of its answer pieces (`answer_pieces`; characters, or the local
        tokenizer's, the first piece after a space), and whether each answer token is scored."""
        ids, scored = [], []
        for k, (piece, score) in enumerate(pieces):
            piece_ids = self.token_ids(piece if k or self.tokenizer_dir is None else f" {piece}")
            ids += piece_ids
            scored += [score] * len(piece_ids)
        return self.token_ids(prompt), ids, scored

    def token_ids(self, text: str) -> list[int]:
        """Token ids of a text: characters, or the local tokenizer's."""
        if self.tokenizer_dir is None:
            return char_ids(text)
        if self._tokenizer is None:
            try:
                from transformers import AutoTokenizer
            except ImportError as error:
                raise ImportError(missing("transformers", "causal_queries with a tokenizer")) from error
            self._tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir, local_files_only=True)
        return self._tokenizer(text, add_special_tokens=False)["input_ids"]

    def examples(self, rng: random.Random, num_nodes: int, count: int, depths: list[int] | None = None,
                 seen: set[str] | None = None) -> tuple[list[str], list[list[tuple[str, bool]]], list[int]]:
        """count (prompt, answer pieces, depth) triples on SCMs of num_nodes nodes; with `depths`, an equal
        share at each of those query depths; prompts in `seen` are skipped."""
        quota = {d: count // len(depths) for d in depths} if depths else None
        prompts, answers, found = [], [], []
        while len(prompts) < count:
            scm, equations, do, target, values, depth = draw_query(rng, num_nodes, **self.scm_args)
            if quota is not None and quota.get(depth, 0) == 0:
                continue
            prompt = self.render(scm, equations, do, target)
            if seen is not None and prompt in seen:
                continue
            if quota is not None:
                quota[depth] -= 1
            prompts.append(prompt), found.append(depth)
            answers.append(answer_pieces(scm, do, target, values, self.answer))
        return prompts, answers, found

    def arrays(self, prompts: list[str], answers: list[list[tuple[str, bool]]], depths: list[int], level: int) -> Arrays:
        """Token windows (`response_windows`: targets on the answer only, and only on its scored
        tokens) with depth and level columns."""
        encoded = [self.encode(p, a) for p, a in zip(prompts, answers)]
        need = max(len(p) + len(a) - 1 for p, a, _ in encoded)
        if need > self.seq_len:
            raise ValueError(f"seq_len = {self.seq_len} is too short: the longest prompt and answer need {need} tokens")
        windows = response_windows([p for p, _, _ in encoded], [a for _, a, _ in encoded], self.seq_len, self.pad_id)
        for row, (prompt, _, scored) in enumerate(encoded):
            given = [len(prompt) - 1 + k for k, score in enumerate(scored) if not score]
            windows["y"][row, given] = IGNORE
        windows["depth"] = np.asarray(depths, dtype=np.int64)
        windows["level"] = np.full(len(prompts), level, dtype=np.int64)
        return windows

    @property
    def pad_id(self) -> int:
        if self.tokenizer_dir is None:
            return 0
        tok = self._tokenizer
        return tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def load(self) -> dict[str, Arrays]:
        rng = random.Random(self.seed)
        share = self.num_train // len(self.levels)
        train, seen = [], set()
        noise = random.Random(f"causal_queries.train_values:{self.seed}")
        for level, nodes in enumerate(self.levels):
            prompts, answers, depths = self.examples(rng, nodes, share)
            seen.update(prompts)
            if self.unique_train is not None:
                keep = self.unique_train // len(self.levels)
                prompts, answers, depths = ([part[i % keep] for i in range(share)] for part in (prompts, answers, depths))
            if self.train_values == "random":
                answers = [[(str(noise.randrange(self.scm_args["num_values"])) if score else text, score)
                            for text, score in pieces] for pieces in answers]
            train.append(self.arrays(prompts, answers, depths, level))
        splits = {"train": {k: np.concatenate([part[k] for part in train]) for k in train[0]}}
        for split, count in (("val", self.num_val), ("test", self.num_test)):
            prompts, answers, depths = self.examples(rng, self.test_nodes, count, self.test_depths, seen)
            splits[split] = self.arrays(prompts, answers, depths, len(self.levels))
        return splits

    def train_dataloader(self) -> DataLoader:
        """`shuffled`: the base module's epoch shuffle; the curricula: `LevelOrder` (module docstring)."""
        if self.order == "shuffled":
            return super().train_dataloader()
        train = self.split("train")
        sampler = LevelOrder(train["level"], torch.initial_seed(), descending=self.order == "anti_curriculum")
        return ResumableLoader(TensorDictDataset(train), batch_size=self.batch_size, sampler=sampler,
                               num_workers=self.num_workers, collate_fn=keep_batch,
                               persistent_workers=self.num_workers > 0)

    def info(self) -> dict[str, int]:
        """vocab_size and seq_len, which the `language_modeling` tasks check against the model."""
        vocab = CHAR_VOCAB if self.tokenizer_dir is None else len(self._tokenizer or self._load_tokenizer())
        return {"vocab_size": vocab, "seq_len": self.seq_len}

    def _load_tokenizer(self) -> Any:
        self.token_ids("")
        return self._tokenizer
