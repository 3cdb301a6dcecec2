"""components/causal/task.py: language_modeling_by_group logs each metric per group of examples."""

from __future__ import annotations

import functools

import lightning as L
import pytest
import torch
from torch import nn

from components.causal.task import LanguageModelingByGroup
from components.losses.basic import CrossEntropy
from components.metrics.recall import MaskedAccuracy


class EchoLM(nn.Module):
    """Predicts that the next token is the current one: logits = one_hot(x) (B, L, V)."""

    def __init__(self, vocab_size: int = 6) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(x, self.vocab_size).float() + 0 * self.unused


def batch() -> dict[str, torch.Tensor]:
    # 6 examples of 3 positions; the answer sits at position 2 (target != -100 only there).
    x = torch.tensor([[1, 2, 3]] * 6)
    answers = torch.tensor([3, 3, 4, 3, 4, 4])  # right (== x[:, 2] = 3) for examples 0, 1, 3
    y = torch.full((6, 3), -100)
    y[:, 2] = answers
    return {"x": x, "y": y, "depth": torch.tensor([1, 1, 1, 2, 2, 3])}


def test_metrics_per_group_by_hand() -> None:
    task = LanguageModelingByGroup(EchoLM(), CrossEntropy(), functools.partial(torch.optim.SGD, lr=0.1),
                                   metrics={"masked_accuracy": MaskedAccuracy()}, groups=[1, 2, 3, 4])
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    data = [batch()]
    loader = torch.utils.data.DataLoader(data, batch_size=None)
    result = trainer.test(task, dataloaders=loader, verbose=False)[0]
    assert result["test/masked_accuracy"] == 0.5  # 3 of 6
    assert result["test/masked_accuracy.depth_1"] == pytest.approx(2 / 3, abs=1e-6)  # examples 0, 1 right; 2 wrong
    assert result["test/masked_accuracy.depth_2"] == 0.5
    assert result["test/masked_accuracy.depth_3"] == 0.0
    assert "test/masked_accuracy.depth_4" not in result  # no example: nothing logged


def test_a_batch_without_the_group_column_is_named() -> None:
    task = LanguageModelingByGroup(EchoLM(), CrossEntropy(), functools.partial(torch.optim.SGD, lr=0.1),
                                   metrics={"masked_accuracy": MaskedAccuracy()}, group_key="hops")
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False)
    loader = torch.utils.data.DataLoader([batch()], batch_size=None)
    with pytest.raises(KeyError, match=r"the batches have no column 'hops' \(columns: \['depth', 'x', 'y'\]\)"):
        trainer.test(task, dataloaders=loader, verbose=False)
