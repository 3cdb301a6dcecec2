"""transformer_lm: shapes, causality, and the residual stream a hook on `blocks.<i>` reads."""

import pytest
import torch

from components.models.transformer_lm import TransformerLM


def test_logits_shape_and_causality():
    torch.manual_seed(0)
    model = TransformerLM(vocab_size=11, d_model=16, n_layers=2, n_heads=4, max_len=8).eval()
    x = torch.randint(0, 11, (3, 8))
    logits = model(x)
    assert logits.shape == (3, 8, 11)
    changed = x.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % 11
    assert torch.allclose(model(changed)[:, :5], logits[:, :5], atol=1e-6), "a position sees no later token"


def test_residual_equals_the_output_of_blocks_i():
    model = TransformerLM(vocab_size=11, d_model=16, n_layers=3, n_heads=2, max_len=8).eval()
    x = torch.randint(0, 11, (2, 8))
    seen = []
    model.get_submodule("blocks.1").register_forward_hook(lambda m, i, o: seen.append(o))
    model(x)
    assert torch.equal(model.residual(x, 1), seen[0])


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 10, "n_heads": 4}, "n_heads must divide d_model, got d_model=10, n_heads=4"),
])
def test_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformerLM(vocab_size=5, **kwargs)


@pytest.mark.parametrize("arguments, problems", [
    ({"n_layers": 0}, {"n_layers": "must be >= 1, got integer 0"}),
    ({"dropout": 1.0}, {"dropout": "must be >= 0 and < 1, got number 1.0"}),
    ({"vocab_size": 1, "n_layers": 1, "dropout": 0.0}, {}),
])
def test_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("models", "transformer_lm", **arguments) == problems


def test_too_long_input_is_an_error():
    with pytest.raises(ValueError, match="sequence length 9 exceeds max_len = 8"):
        TransformerLM(vocab_size=5, d_model=8, n_heads=2, max_len=8)(torch.zeros(1, 9, dtype=torch.long))
