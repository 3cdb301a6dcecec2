"""language_modeling: next-token classification at every position; vocab/seq_len checks."""

import functools

import lightning as L
import torch

from components.data.text import CharText
from components.losses.basic import CrossEntropy
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
