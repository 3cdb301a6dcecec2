"""components/sequence/attention.py: the chunked causal linear attention and the two mixers."""

from __future__ import annotations

import functools

import pytest
import torch

from components.sequence.attention import LinearAttention, SoftmaxAttention, causal_linear_attention
from components.sequence.feature_maps import Elu1, LLoPSLearned


def quadratic(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, eps: float) -> torch.Tensor:
    scores = (phi_q @ phi_k.transpose(-1, -2)).tril()
    return scores @ v / (scores.sum(-1, keepdim=True) + eps)


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 64])
def test_chunked_form_equals_the_masked_quadratic_form(chunk_size: int) -> None:
    g = torch.Generator().manual_seed(0)
    phi_q, phi_k = (torch.rand(2, 3, 13, 6, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 3, 13, 4, generator=g, dtype=torch.float64)
    out = causal_linear_attention(phi_q, phi_k, v, chunk_size=chunk_size, eps=1e-6)
    assert (out - quadratic(phi_q, phi_k, v, 1e-6)).abs().max() < 1e-12


def test_first_position_reads_only_its_own_value() -> None:
    phi = torch.rand(1, 5, 4, dtype=torch.float64) + 0.1
    v = torch.randn(1, 5, 2, dtype=torch.float64)
    out = causal_linear_attention(phi, phi, v, chunk_size=2, eps=0.0)
    assert torch.allclose(out[0, 0], v[0, 0])


MIXERS = {
    "softmax": lambda: SoftmaxAttention(d_model=16, n_heads=4),
    "elu1": lambda: LinearAttention(16, Elu1, n_heads=4, chunk_size=3),
    "llops": lambda: LinearAttention(16, functools.partial(LLoPSLearned, rank=4), n_heads=2, qk_norm=True, chunk_size=4),
}


@pytest.mark.parametrize("name", MIXERS)
def test_mixers_are_causal(name: str) -> None:
    torch.manual_seed(0)
    mixer = MIXERS[name]()
    x = torch.randn(2, 10, 16)
    changed = x.clone()
    changed[:, 6:] = torch.randn(2, 4, 16)
    out, out_changed = mixer(x), mixer(changed)
    assert out.shape == (2, 10, 16)
    assert torch.allclose(out[:, :6], out_changed[:, :6], atol=1e-6)
    assert not torch.allclose(out[:, 6:], out_changed[:, 6:], atol=1e-3)


def test_default_softmax_attention_is_bit_identical_to_causal_sdpa() -> None:
    torch.manual_seed(0)
    mixer = SoftmaxAttention(d_model=16, n_heads=4).eval()
    x = torch.randn(2, 7, 16)
    q, k, v = mixer.heads(x)
    expected = mixer.merge(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert torch.equal(mixer(x), expected)


def test_non_causal_softmax_attention_reads_later_positions() -> None:
    torch.manual_seed(0)
    mixer = SoftmaxAttention(d_model=16, n_heads=4, causal=False).eval()
    x = torch.randn(2, 10, 16)
    changed = x.clone()
    changed[:, 6:] = torch.randn(2, 4, 16)
    assert not torch.allclose(mixer(x)[:, :6], mixer(changed)[:, :6], atol=1e-3)
    flipped = mixer(x.flip(1)).flip(1)  # no mask: permuting positions permutes the outputs
    assert torch.allclose(mixer(x), flipped, atol=1e-5)


def test_linear_attention_builds_one_feature_map_with_its_head_width() -> None:
    mixer = LinearAttention(32, functools.partial(LLoPSLearned, rank=2), n_heads=4)
    assert mixer.feature_map.head_dim == 8 and mixer.feature_map.projections.shape == (2, 2, 8)


def test_heads_must_divide_the_width() -> None:
    with pytest.raises(ValueError, match="n_heads must divide d_model, got d_model=10, n_heads=4"):
        SoftmaxAttention(10, n_heads=4)
