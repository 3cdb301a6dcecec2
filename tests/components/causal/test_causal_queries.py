"""components/causal/queries.py: causal_queries examples, held-out splits, and the curriculum that
sees exactly the flat baseline's examples."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.causal.queries import CausalQueries, LevelOrder

SMALL = dict(levels=[3, 4, 5], num_train=300, test_nodes=5, test_depths=[1, 2, 3], num_val=30, num_test=60,
             seq_len=48, batch_size=16, seed=3)


def text(ids: torch.Tensor) -> str:
    return "".join(chr(int(i) + 31) for i in ids if int(i))


def solve(prompt: str) -> tuple[int, int]:
    """An independent reading of the code rendering: execute the equations mod 3 with the do
    applied; (answer, depth of the asked variable)."""
    *lines, do, question = prompt.split(";")
    set_name, set_value = do[3:-1].split("=")
    values, depth = {}, {}
    for line in lines:
        name, rhs = line.split("=")
        terms = rhs.split("+")
        if name == set_name:
            values[name], depth[name] = int(set_value), 0
        else:
            values[name] = sum(values[t] if t in values else int(t) for t in terms) % 3
            depth[name] = 1 + max(depth[t] for t in terms[:-1]) if len(terms) > 1 else 0
    return values[question[:-1]], depth[question[:-1]]


def test_answers_and_depths_agree_with_an_independent_interpreter() -> None:
    data = CausalQueries(**SMALL)
    for name in ("train", "test"):
        split = data.split(name)
        for x, y, depth in zip(split["x"], split["y"], split["depth"]):
            scored = torch.nonzero(y != -100).flatten()
            assert len(scored) == 1  # one answer character, the token after '?'
            prompt = text(x[: scored[0] + 1])
            assert prompt.endswith("?")
            assert (int(y[scored[0]]) + 31 - ord("0"), int(depth)) == solve(prompt)


def execute(prompt: str) -> tuple[dict[str, int], list[str]]:
    """An independent reading of the code rendering: every variable's value with the do applied,
    and the variables the asked one reads (itself and its ancestors, through no set variable), in
    the order of the equations."""
    *lines, do, question = prompt.split(";")
    set_name, set_value = do[3:-1].split("=")
    values, reads = {}, {}
    for line in lines:
        name, rhs = line.split("=")
        parents = [t for t in rhs.split("+") if t.isalpha()] if name != set_name else []
        values[name] = int(set_value) if name == set_name else sum(
            values[t] if t in values else int(t) for t in rhs.split("+")) % 3
        reads[name] = {name}.union(*(reads[p] for p in parents))
    order = [line.split("=")[0] for line in lines]
    return values, [n for n in order if n in reads[question[:-1]]]


def test_scratchpad_lists_the_needed_values_in_causal_order_and_scores_only_them() -> None:
    data = CausalQueries(**{**SMALL, "answer": "scratchpad", "seq_len": 60})
    for name in ("train", "test"):
        split = data.split(name)
        for x, y in zip(split["x"], split["y"]):
            full = text(x)
            prompt, answer = full.split("?")
            values, needed = execute(prompt + "?")
            assert answer == "".join(f"{n}{values[n]}" for n in needed)[:-1]  # x ends before the last value
            scored = torch.nonzero(y != -100).flatten().tolist()
            start = len(prompt) + 1  # position of the first answer token in x
            assert scored == [start + 2 * k for k in range(len(needed))]  # the values; the names are given
            assert [int(y[i]) + 31 - ord("0") for i in scored] == [values[n] for n in needed]


def test_held_out_splits_use_test_nodes_and_equal_depth_shares() -> None:
    data = CausalQueries(**SMALL)
    train = {text(x) for x in data.split("train")["x"]}
    for name, count in (("val", 30), ("test", 60)):
        split = data.split(name)
        assert torch.bincount(split["depth"]).tolist() == [0] + [count // 3] * 3
        assert all(text(x).count("=") == 5 + 1 for x in split["x"])  # 5 equations and the do
        assert not train & {text(x) for x in split["x"]}
    levels = data.split("train")["level"]
    assert torch.bincount(levels).tolist() == [100, 100, 100]
    equations = [text(x).count("=") - 1 for x in data.split("train")["x"]]
    assert [equations[i] for i in (0, 100, 200)] == [3, 4, 5]


def batches(order: str) -> list[dict[str, torch.Tensor]]:
    data = CausalQueries(**{**SMALL, "order": order})
    torch.manual_seed(11)  # the loaders take the run's seed from torch's initial seed
    return list(data.train_dataloader())


def test_curriculum_and_flat_see_the_same_examples_tokens_and_steps() -> None:
    flat, curriculum, anti = batches("shuffled"), batches("curriculum"), batches("anti_curriculum")
    assert len(flat) == len(curriculum) == len(anti) == 19  # ceil(300 / 16) steps
    rows = {order: sorted(map(tuple, torch.cat([b["x"] for b in run]).tolist()))
            for order, run in (("flat", flat), ("curriculum", curriculum), ("anti", anti))}
    assert rows["flat"] == rows["curriculum"] == rows["anti"]  # the same multiset of examples
    tokens = {order: sum(int((b["x"] != 0).sum()) for b in run) for order, run in
              (("flat", flat), ("curriculum", curriculum), ("anti", anti))}
    assert len(set(tokens.values())) == 1
    assert [len(b["x"]) for b in flat] == [len(b["x"]) for b in curriculum]
    # the orders differ: levels rise through the curriculum, fall through the reverse, mix when flat
    levels = {order: torch.cat([b["level"] for b in run]) for order, run in
              (("flat", flat), ("curriculum", curriculum), ("anti", anti))}
    assert (levels["curriculum"].diff() >= 0).all() and (levels["anti"].diff() <= 0).all()
    assert not (levels["flat"].diff() >= 0).all()


def test_level_order_reshuffles_within_levels_by_epoch() -> None:
    sampler = LevelOrder(torch.tensor([1, 0, 1, 0, 1, 0, 1, 0]), seed=5)
    first = list(sampler)
    assert sorted(first[:4]) == [1, 3, 5, 7] and sorted(first[4:]) == [0, 2, 4, 6]
    assert list(sampler) == first  # same epoch, same order (resumable)
    orders = set()
    for epoch in range(6):
        sampler.set_epoch(epoch)
        orders.add(tuple(sampler))
    assert len(orders) > 1


def test_info_and_char_vocabulary() -> None:
    assert CausalQueries(**SMALL).info() == {"vocab_size": 96, "seq_len": 48}


@pytest.mark.parametrize("kwargs, message", [
    ({"num_train": 301}, "num_train must split equally over the 3 levels, got 301"),
    ({"num_test": 61}, "num_val and num_test must split equally over the 3 test_depths"),
    ({"test_nodes": 3}, "test_depths must be < test_nodes = 3, got 3"),
])
def test_bad_sizes_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CausalQueries(**{**SMALL, **kwargs})


def test_too_short_seq_len_names_the_need() -> None:
    with pytest.raises(ValueError, match="seq_len = 20 is too short: the longest prompt and answer need"):
        CausalQueries(**{**SMALL, "seq_len": 20}).setup()


def test_a_missing_tokenizer_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_CAUSIM_LM_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"causal_queries: no local tokenizer folder \(\$EXPSPEC_CAUSIM_LM_DIR = \(unset\)\)"):
        CausalQueries(**SMALL, rendering="text", tokenizer_env="EXPSPEC_CAUSIM_LM_DIR")


def test_data_volume_keeps_the_held_out_queries_steps_and_tokens() -> None:
    """unique_train: fewer distinct training examples (the first ones of each level, repeated in
    turn), the same number of examples and the same held-out splits as the full draw."""
    kwargs = dict(SMALL, answer="scratchpad", seq_len=56)
    full = CausalQueries(**kwargs).load()
    small = CausalQueries(**kwargs, unique_train=30).load()
    for split in ("val", "test"):
        assert all(torch.equal(torch.as_tensor(full[split][k]), torch.as_tensor(small[split][k])) for k in full[split])
    assert len(small["train"]["x"]) == len(full["train"]["x"]) == 300
    assert len({tuple(row) for row in small["train"]["x"].tolist()}) == 30
    for level in range(3):  # the first 10 of each level's 100, repeated 10 times
        rows = small["train"]["x"][small["train"]["level"] == level]
        first = full["train"]["x"][full["train"]["level"] == level][:10]
        assert (rows == np.tile(first, (10, 1))).all()
    with pytest.raises(ValueError, match="unique_train must split equally"):
        CausalQueries(**kwargs, unique_train=31)


def test_random_training_values_leave_prompts_and_held_out_answers_true() -> None:
    """train_values: random (the control at chance): every scored training value redrawn (about 1/3
    agree with the true one), names and prompts unchanged, val and test as they were."""
    kwargs = dict(SMALL, answer="scratchpad", seq_len=56)
    true, noisy = CausalQueries(**kwargs).load(), CausalQueries(**kwargs, train_values="random").load()
    for split in ("val", "test"):
        assert all(torch.equal(torch.as_tensor(true[split][k]), torch.as_tensor(noisy[split][k])) for k in true[split])
    y, z = torch.as_tensor(true["train"]["y"]), torch.as_tensor(noisy["train"]["y"])
    scored = y != -100
    assert torch.equal(scored, z != -100) and torch.equal(y[~scored], z[~scored])
    assert 0.25 < (y[scored] == z[scored]).float().mean() < 0.42
    assert set(z[scored].tolist()) == {char - 31 for char in b"012"}
