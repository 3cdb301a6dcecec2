"""language_modeling: next-token classification at every position; vocab/seq_len checks."""

import functools

import lightning as L
import pytest
import torch

from components.data.text import CharText
from components.losses.basic import CrossEntropy
from components.metrics.standard import Accuracy
from components.models.transformer_lm import TransformerLM
from components.tasks.language_modeling import LanguageModeling


def test_check_data_names_the_mismatches():
    info = {"vocab_size": 103, "seq_len": 32}
    assert LanguageModeling.check_data(info, {"vocab_size": 103, "max_len": 32}) == []
    assert LanguageModeling.check_data(info, {"vocab_size": 100, "max_len": 16}) == [
        ("vocab_size", "is 100 but the data has vocab_size = 103"),
        ("max_len", "is 16 but the data has seq_len = 32"),
    ]


def test_a_few_steps_lower_bits_per_token():
    L.seed_everything(0, verbose=False)
    data = CharText(seq_len=16, batch_size=32, max_chars=12_000)
    model = TransformerLM(vocab_size=len(data.vocab), d_model=16, n_layers=1, n_heads=2, max_len=16)
    task = LanguageModeling(model, CrossEntropy(), functools.partial(torch.optim.Adam, lr=1e-2))
    trainer = L.Trainer(max_steps=25, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, accelerator="cpu")
    trainer.fit(task, datamodule=data)
    trainer.test(task, datamodule=data, verbose=False)  # the last 10% of the text
    bits = float(trainer.callback_metrics["test/bits_per_token"])
    assert bits < 0.85 * torch.log2(torch.tensor(float(len(data.vocab))))  # well below uniform
    assert abs(bits - float(trainer.callback_metrics["test/loss"]) / 0.6931) < 1e-3


class _OneTermLoss(CrossEntropy):
    """Cross-entropy reporting itself as one named term (`last_terms`), as `weighted_sum` does."""

    def forward(self, outputs, batch):
        loss = super().forward(outputs, batch)
        self.last_terms = {"ce": loss.detach()}
        return loss


def test_logs_loss_terms_and_metrics_as_classification_does():
    """The step's logging is Supervised.log_step's: loss, named loss terms, metrics per split."""
    L.seed_everything(0, verbose=False)
    data = CharText(seq_len=8, batch_size=8, max_chars=4_000)
    model = TransformerLM(vocab_size=len(data.vocab), d_model=8, n_layers=1, n_heads=2, max_len=8)
    task = LanguageModeling(model, _OneTermLoss(), functools.partial(torch.optim.Adam, lr=1e-2),
                            metrics={"accuracy": Accuracy()})
    trainer = L.Trainer(max_steps=2, limit_val_batches=0, limit_test_batches=3, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu")
    trainer.fit(task, datamodule=data)
    logged = dict(trainer.callback_metrics)
    assert {"train/loss", "train/loss.ce", "train/accuracy"} <= set(logged)
    trainer.test(task, datamodule=data, verbose=False)
    logged = trainer.callback_metrics
    assert {"test/loss", "test/loss.ce", "test/accuracy", "test/bits_per_token"} <= set(logged)
    assert float(logged["test/loss.ce"]) == pytest.approx(float(logged["test/loss"]))
    assert 0.0 <= float(logged["test/accuracy"]) <= 1.0
