"""activation_buffer: U unique vectors replayed to T, nested buffers, fresh eval, fresh streaming."""

import pytest
import torch

from components.sae.activations import ActivationBuffer, ReplaySampler
from components.data.text import CharText


def test_replay_sampler_serves_total_indices_in_whole_passes():
    order = list(ReplaySampler(size=10, total=25, seed=0))
    assert len(order) == 25
    assert sorted(order[:10]) == list(range(10)) and sorted(order[10:20]) == list(range(10))
    assert len(set(order[20:])) == 5 and order[:10] != order[10:20]


def _extract(batch):
    """A stand-in frozen model: one-hot of each token, so a vector names its token."""
    return torch.nn.functional.one_hot(batch["x"], 103).float().reshape(-1, 103)


def _buffer(**kwargs):
    data = ActivationBuffer(CharText(seq_len=16, max_chars=40_000), normalize=False, collect_batch_size=8, **kwargs)
    data.setup()
    data.attach(_extract)
    return data


def test_buffer_holds_u_vectors_replayed_to_t_and_smaller_buffers_are_prefixes():
    small = _buffer(total_samples=800, buffer_size=40, batch_size=64, eval_samples=1000)
    large = _buffer(total_samples=800, buffer_size=200)
    assert torch.equal(large.train_buffer()[:40], small.train_buffer()), "same selection order across U"
    batches = list(small.train_dataloader())
    served = torch.cat([b["x"] for b in batches])
    assert len(served) == 800 and len(batches) == 13
    assert len(torch.unique(served, dim=0)) <= len(torch.unique(small.train_buffer(), dim=0))
    test = torch.cat([b["x"] for b in small.test_dataloader()])
    text = torch.cat([b for b in small.source.split("test")["x"][:63]]).reshape(-1)
    assert len(test) == 1000 and torch.equal(test.argmax(1), text[:1000]), "fresh test vectors, in text order"


def test_normalize_scales_the_buffer_to_mean_squared_norm_d():
    data = _buffer(total_samples=500, buffer_size=500)
    data.normalize = True
    x = torch.cat([b["x"] for b in data.train_dataloader()])
    assert x.pow(2).sum(1).mean() == pytest.approx(103, rel=1e-4)


def test_fresh_streaming_serves_t_vectors_once():
    data = _buffer(total_samples=1000, buffer_size=None, batch_size=128)
    batches = list(data.train_dataloader())
    assert sum(len(b["x"]) for b in batches) == 1000 and len(batches) == 8
    too_many = _buffer(total_samples=10**6, buffer_size=None)
    with pytest.raises(ValueError, match="fresh streaming needs total_samples = 1000000 unique vectors"):
        list(too_many.train_dataloader())


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"buffer_size must be in \[1, total_samples = 10\] or null, got 11"):
        ActivationBuffer(CharText(), total_samples=10, buffer_size=11)
    data = ActivationBuffer(CharText(seq_len=16, max_chars=40_000), total_samples=10**6, buffer_size=10**6)
    with pytest.raises(RuntimeError, match="activation_buffer has no activation extractor"):
        data.train_dataloader()
    data.attach(_extract)
    with pytest.raises(ValueError, match="the train split yields 31984 activation vectors, fewer than the 1000000"):
        data.train_buffer()
