"""components/data/base.py: the train loader's place in an epoch survives a checkpoint."""

from __future__ import annotations

import torch

from components.data.base import ResumableLoader, TensorDictDataset, keep_batch, train_loader


def _loader() -> ResumableLoader:
    torch.manual_seed(3)  # the run's seed: EpochShuffle reads torch.initial_seed()
    return train_loader(TensorDictDataset({"x": torch.arange(10)}), batch_size=3, collate_fn=keep_batch)


def _order(batches) -> list[list[int]]:
    return [batch["x"].tolist() for batch in batches]


def test_resumed_mid_epoch_continues_with_the_next_batch() -> None:
    whole = _loader()
    whole.sampler.set_epoch(2)
    expected = _order(whole)
    interrupted = _loader()
    interrupted.sampler.set_epoch(2)
    iterator = iter(interrupted)
    seen = _order([next(iterator), next(iterator)])
    state = interrupted.state_dict()
    assert state == {"epoch": 2, "batches": 2}
    resumed = _loader()
    resumed.load_state_dict(state)
    resumed.sampler.set_epoch(2)  # as Lightning does when it starts the epoch again
    assert seen + _order(resumed) == expected
    assert resumed.position == 4 and _order(resumed) == expected  # the next pass is a whole epoch


def test_state_of_another_epoch_skips_nothing_and_draws_like_a_fresh_start() -> None:
    saved = _loader()
    saved.sampler.set_epoch(1)
    list(saved)
    resumed = _loader()
    resumed.load_state_dict(saved.state_dict())  # saved at the end of epoch 1
    resumed.sampler.set_epoch(2)
    fresh = _loader()
    fresh.sampler.set_epoch(2)
    assert _order(resumed) == _order(fresh)
    assert _order(resumed) != _order(saved)  # the permutation depends on the epoch


def test_skipping_leaves_the_global_generator_where_the_uninterrupted_run_had_it() -> None:
    """Creating the iterator draws DataLoader's base seed; the uninterrupted run drew it before
    its checkpoint, so the resumed one must not draw it again."""
    interrupted = _loader()
    iterator = iter(interrupted)
    next(iterator)
    state, after_first_batch = interrupted.state_dict(), torch.get_rng_state()
    resumed = _loader()
    resumed.load_state_dict(state)
    torch.set_rng_state(after_first_batch)
    next(iter(resumed))
    assert torch.equal(torch.get_rng_state(), after_first_batch)
