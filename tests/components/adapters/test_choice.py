"""components/adapters/choice.py: multiple-choice prompts and the last-token classifier."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from components.adapters.choice import PAD, LastTokenClassifier, choice_prompt, right_padded


def test_choice_prompt_letters_the_choices() -> None:
    text = choice_prompt("Q: {question}\n{choices}\nA:", "Sky?", ["blue", "green"])
    assert text == "Q: Sky?\nA) blue\nB) green\nA:"


def test_right_padded_keeps_the_end_and_pads_with_no_token() -> None:
    x = right_padded([[1, 2, 3, 4], [5]], 3)
    assert np.array_equal(x, [[2, 3, 4], [5, PAD, PAD]])


class _FakeLM(nn.Module):
    """`.lm.model(input_ids, attention_mask).last_hidden_state`: the token id, repeated."""

    def __init__(self) -> None:
        super().__init__()
        self.lm = SimpleNamespace(model=self._model)

    @staticmethod
    def _model(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> SimpleNamespace:
        return SimpleNamespace(last_hidden_state=input_ids.float().unsqueeze(-1).expand(-1, -1, 3))


def test_the_classifier_reads_the_last_real_token() -> None:
    model = LastTokenClassifier(_FakeLM(), nn.Identity())
    x = torch.tensor([[4, 7, PAD], [2, 3, 9]])
    assert torch.equal(model(x), torch.tensor([[7.0] * 3, [9.0] * 3]))
