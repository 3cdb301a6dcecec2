"""sae_training: trains an SAE on a frozen LM's activations read through activation_buffer."""

import functools

import lightning as L
import pytest
import torch

import registry
from components.sae.activations import ActivationBuffer
from components.data.text import CharText
from components.sae.models import TopKSAE
from components.models.transformer_lm import TransformerLM
from components.sae.task import SAETraining


def _fit(buffer_size: int | None, total: int = 8192, seed: int = 0) -> tuple[SAETraining, dict[str, float]]:
    L.seed_everything(seed, verbose=False)
    torch.manual_seed(0)
    lm = TransformerLM(vocab_size=103, d_model=16, n_layers=2, n_heads=2, max_len=16)
    lm_before = {k: v.clone() for k, v in lm.state_dict().items()}
    task = SAETraining(TopKSAE(16, 64, 2), functools.partial(torch.optim.Adam, lr=1e-2), model=lm, site="blocks.0")
    data = ActivationBuffer(CharText(seq_len=16, max_chars=60_000), total_samples=total, buffer_size=buffer_size,
                            batch_size=256, eval_samples=2048)
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, accelerator="cpu")
    trainer.fit(task, datamodule=data)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    trainer.test(task, datamodule=data, verbose=False)
    metrics.update({k: float(v) for k, v in trainer.callback_metrics.items()})
    assert all(torch.equal(v, lm.state_dict()[k]) for k, v in lm_before.items()), "the LM stays frozen"
    return task, metrics


def test_a_tiny_buffer_replayed_is_worse_than_fresh_data_and_metrics_are_logged():
    """The paper's contrast at toy size: U = T/128 replayed 128 times vs. U = T seen once."""
    task, fresh = _fit(8192)
    _, tiny = _fit(64)
    assert {"test/fvu", "test/explained_variance", "test/mse", "test/l0", "test/dead_fraction", "val/fvu"} <= set(fresh)
    assert fresh["test/fvu"] < 0.5 and fresh["test/l0"] <= 2
    assert fresh["test/explained_variance"] == pytest.approx(1 - fresh["test/fvu"], abs=1e-6)
    assert tiny["test/fvu"] >= 1.3 * fresh["test/fvu"]
    assert torch.allclose(task.sae.W_dec.norm(dim=1), torch.ones(64), atol=1e-5), "atoms renormalized"
    assert bool(task.bias_initialized)


def test_checkpoint_without_model_weights():
    lm = TransformerLM(vocab_size=7, d_model=8, n_layers=1, n_heads=2, max_len=4)
    task = SAETraining(TopKSAE(8, 16, 2), torch.optim.Adam, model=lm, site="blocks.0", save_model_weights=False)
    state = task.state_dict()
    assert state and not any(k.startswith("model.") for k in state)
    task.load_state_dict(state)  # the model's own weights fill in
    assert any(k.startswith("model.") for k in SAETraining(TopKSAE(8, 16, 2), torch.optim.Adam, model=lm,
                                                            site="blocks.0").state_dict())


def test_skip_positions_and_width_mismatch():
    lm = TransformerLM(vocab_size=7, d_model=8, n_layers=1, n_heads=2, max_len=4)
    x = {"x": torch.zeros(3, 4, dtype=torch.long)}
    assert SAETraining(TopKSAE(8, 16, 2), torch.optim.Adam, model=lm, site="blocks.0", skip_positions=1).activations(x).shape == (9, 8)
    with pytest.raises(ValueError, match="sae.d_in is 6 but the activations at site 'blocks.0' have width 8"):
        SAETraining(TopKSAE(6, 16, 2), torch.optim.Adam, model=lm, site="blocks.0").activations(x)


@pytest.mark.parametrize("site, message", [
    (None, "site must name a submodule of the model whose output the SAE reads, got none"),
    ("blocks.5", "site 'blocks.5' is no submodule of TransformerLM; e.g. blocks.0"),
])
def test_bad_site(site, message):
    lm = TransformerLM(vocab_size=7, d_model=8, n_layers=1, n_heads=2, max_len=4)
    with pytest.raises(ValueError, match=message):
        SAETraining(TopKSAE(8, 16, 2), torch.optim.Adam, model=lm, site=site)


def test_registered():
    """The sae family's entries resolve to its classes."""
    for table, name, target in [
        ("tasks", "sae_training", "components.sae.task:SAETraining"),
        ("data", "activation_buffer", "components.sae.activations:ActivationBuffer"),
        ("models", "topk_sae", "components.sae.models:TopKSAE"),
    ]:
        assert registry.KINDS[table].load(name).__name__ == target.rsplit(":", 1)[1]
