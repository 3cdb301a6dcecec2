"""pretrained_causal_lm: a clear error without weights; a tiny local Llama loads and is readable."""

from pathlib import Path

import pytest
import torch

from components.models.pretrained_lm import PretrainedCausalLM


def test_missing_folder_names_the_variable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("MY_LM_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"local checkpoint .* not found \(\$MY_LM_DIR = \(unset\); missing config.json\).*Nothing is downloaded"):
        PretrainedCausalLM(env="MY_LM_DIR")
    with pytest.raises(FileNotFoundError, match=r"model.path = /nonexistent"):
        PretrainedCausalLM(path="/nonexistent")


def test_tiny_random_llama_from_a_local_folder(tmp_path: Path):
    transformers = pytest.importorskip("transformers")
    from components.sae.models import TopKSAE
    from components.sae.task import SAETraining

    config = transformers.LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    model = PretrainedCausalLM(path=str(tmp_path), dtype="float32")
    x = torch.randint(0, 50, (2, 8))
    assert model(x).shape == (2, 8, 50)
    task = SAETraining(TopKSAE(16, 32, 2), torch.optim.Adam, model=model, site="lm.model.layers.0", skip_positions=1)
    assert task.activations({"x": x}).shape == (14, 16)


def tiny_llama(tmp_path: Path, layers: int) -> PretrainedCausalLM:
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    return PretrainedCausalLM(path=str(tmp_path), dtype="float32")


def test_hidden_states_and_logit_lens_of_a_local_llama(tmp_path: Path):
    """Embedding plus one state per decoder layer, the last before the final norm: the lens on it
    is the model's own output."""
    model = tiny_llama(tmp_path, layers=3)
    x = torch.randint(0, 50, (2, 8))
    states = model.hidden_states(x)
    assert len(states) == 4 and states[0].shape == (2, 8, 16)
    torch.testing.assert_close(model.logits(states[-1]), model(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(states[0], model.lm.model.embed_tokens(x))


def test_hidden_states_are_the_residual_stream_after_each_layer(tmp_path: Path):
    model = tiny_llama(tmp_path, layers=2)
    x = torch.randint(0, 50, (2, 8))
    captured = []
    handle = model.lm.model.layers[0].register_forward_hook(
        lambda module, inputs, output: captured.append(output[0] if isinstance(output, tuple) else output))
    states = model.hidden_states(x)
    handle.remove()
    assert model.d_model == 16 and len(states) == 3 and all(h.shape == (2, 8, 16) for h in states)
    assert torch.equal(states[0], model.lm.model.embed_tokens(x))
    assert torch.allclose(states[1], captured[0])
