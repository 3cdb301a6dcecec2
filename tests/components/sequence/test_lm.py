"""components/sequence/lm.py: the causal LM with pluggable mixers."""

from __future__ import annotations

import functools

import pytest
import torch

from components.sequence.attention import LinearAttention, SoftmaxAttention
from components.sequence.feature_maps import LLoPSLearned
from components.sequence.lm import CausalLM, ShortConv

LINEAR = functools.partial(LinearAttention, feature_map=functools.partial(LLoPSLearned, rank=2), n_heads=2)


@pytest.mark.parametrize("mixer", [functools.partial(SoftmaxAttention, n_heads=2), LINEAR], ids=["softmax", "llops"])
def test_logits_are_causal_and_shaped(mixer: object) -> None:
    torch.manual_seed(0)
    model = CausalLM(vocab_size=11, mixer=mixer, d_model=16, n_layers=2, max_len=12, short_conv=3)
    x = torch.randint(0, 11, (3, 12))
    changed = x.clone()
    changed[:, 8:] = (x[:, 8:] + 1) % 11
    logits, logits_changed = model(x), model(changed)
    assert logits.shape == (3, 12, 11)
    assert torch.allclose(logits[:, :8], logits_changed[:, :8], atol=1e-6)
    assert not torch.allclose(logits[:, 8:], logits_changed[:, 8:], atol=1e-4)


def test_each_layer_gets_its_own_mixer() -> None:
    model = CausalLM(vocab_size=5, mixer=LINEAR, d_model=8, n_layers=3)
    maps = [block.mixer.feature_map.projections for block in model.blocks]
    assert len({id(p) for p in maps}) == 3


def test_short_conv_starts_as_the_identity_and_is_causal() -> None:
    conv = ShortConv(4, width=3)
    torch.nn.init.zeros_(conv.conv.weight)
    torch.nn.init.zeros_(conv.conv.bias)
    with torch.no_grad():
        conv.conv.weight[:, 0, -1] = 1.0
        x = torch.randn(2, 6, 4)
        assert torch.equal(conv(x), x)
        conv.conv.weight[:, 0, 0] = 1.0   # now x_t + x_{t-2}
        expected = x.clone()
        expected[:, 2:] += x[:, :-2]
        assert torch.allclose(conv(x), expected)
    model = CausalLM(vocab_size=5, mixer=LINEAR, d_model=8, short_conv=2)
    assert torch.equal(model.blocks[0].conv.conv.weight[:, 0], torch.tensor([[0.0, 1.0]] * 8))


def test_errors_name_the_problem() -> None:
    model = CausalLM(vocab_size=5, mixer=LINEAR, d_model=8, max_len=4)
    with pytest.raises(ValueError, match="sequence length 5 exceeds max_len = 4"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"takes token ids of shape \(B, L\), got \(4,\)"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(TypeError, match="mixer must be a sequence-mixer factory, got int"):
        CausalLM(vocab_size=5, mixer=3)


def test_hidden_states_are_the_block_outputs_and_the_lens_of_the_last_is_the_output() -> None:
    torch.manual_seed(0)
    model = CausalLM(vocab_size=11, mixer=functools.partial(SoftmaxAttention, n_heads=2), d_model=16, n_layers=3, max_len=8).eval()
    x = torch.randint(0, 11, (2, 8))
    seen = []
    hooks = [block.register_forward_hook(lambda _m, _i, out: seen.append(out)) for block in model.blocks]
    states = model.hidden_states(x)
    for hook in hooks:
        hook.remove()
    assert len(states) == 4 and all(s.shape == (2, 8, 16) for s in states)
    for state, hooked in zip(states[1:], seen):
        torch.testing.assert_close(state, hooked, rtol=0, atol=0)
    torch.testing.assert_close(model.residual(x, 1), states[2], rtol=0, atol=0)
    torch.testing.assert_close(model.logits(states[-1]), model(x), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"layer must be in \[0, 2\]"):
        model.residual(x, 3)


def test_transformer_lm_is_causal_lm_with_softmax_attention() -> None:
    from components.models.transformer_lm import TransformerLM
    torch.manual_seed(0)
    named = TransformerLM(vocab_size=11, d_model=16, n_layers=2, n_heads=2, max_len=8)
    torch.manual_seed(0)
    built = CausalLM(vocab_size=11, mixer=functools.partial(SoftmaxAttention, n_heads=2, dropout=0.0), d_model=16, n_layers=2,
                     max_len=8)
    x = torch.randint(0, 11, (2, 8))
    torch.testing.assert_close(named(x), built(x), rtol=0, atol=0)


SOFTMAX = functools.partial(SoftmaxAttention, n_heads=2)


def test_one_mixer_listed_is_the_single_mixer_model() -> None:
    torch.manual_seed(0)
    single = CausalLM(vocab_size=7, mixer=SOFTMAX, d_model=8, n_layers=3)
    torch.manual_seed(0)
    listed = CausalLM(vocab_size=7, mixers=[SOFTMAX], d_model=8, n_layers=3)
    x = torch.randint(0, 7, (2, 5))
    assert all(torch.equal(a, b) for a, b in zip(single.state_dict().values(), listed.state_dict().values()))
    assert torch.equal(single(x), listed(x))
    assert single.parameter_groups is None and single.output_multiplier is None   # one LR, as before


def test_mixers_are_cycled_over_the_layers() -> None:
    from components.sequence.ssm import SSDMixer

    ssm = functools.partial(SSDMixer, d_state=4, head_dim=8)
    model = CausalLM(vocab_size=7, mixers=[ssm, SOFTMAX], d_model=8, n_layers=5)
    kinds = [type(block.mixer).__name__ for block in model.blocks]
    assert kinds == ["SSDMixer", "SoftmaxAttention", "SSDMixer", "SoftmaxAttention", "SSDMixer"]
    assert model(torch.randint(0, 7, (2, 6))).shape == (2, 6, 7)


def test_exactly_one_of_mixer_and_mixers() -> None:
    with pytest.raises(ValueError, match="causal_lm takes exactly one of `mixer` \\(every layer\\) and `mixers`"):
        CausalLM(vocab_size=5, mixer=SOFTMAX, mixers=[SOFTMAX])
    with pytest.raises(ValueError, match="causal_lm takes exactly one of `mixer`"):
        CausalLM(vocab_size=5)
    with pytest.raises(ValueError, match="mixers must list at least one sequence mixer"):
        CausalLM(vocab_size=5, mixers=[])
    with pytest.raises(TypeError, match="mixer must be a sequence-mixer factory, got str"):
        CausalLM(vocab_size=5, mixers=[SOFTMAX, "attention"])


def test_twin_has_the_shapes_of_the_other_width_and_no_memory() -> None:
    model = CausalLM(vocab_size=7, mixers=[SOFTMAX], d_model=8, n_layers=2, mlp_ratio=2)
    twin = model.twin(16)
    assert twin.blocks[0].mlp[0].weight.shape == (32, 16) and twin.embed.weight.shape == (7, 16)
    assert all(p.is_meta for p in twin.parameters())
