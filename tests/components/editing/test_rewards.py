"""Edit rewards: the minimal-change reward subtracts lambda x unintended; edit-only ignores it."""

from __future__ import annotations

import torch

from components.editing.rewards import EditOnly, MinimalChange


def test_minimal_change_and_edit_only() -> None:
    implemented, unintended = torch.tensor([1.0, 0.9, 0.2]), torch.tensor([0.0, 0.5, 0.0])
    assert torch.allclose(MinimalChange(unintended_weight=1.0)(implemented, unintended), torch.tensor([1.0, 0.4, 0.2]))
    assert torch.allclose(MinimalChange(unintended_weight=2.0)(implemented, unintended), torch.tensor([1.0, -0.1, 0.2]))
    assert EditOnly()(implemented, unintended).tolist() == implemented.tolist()
    # the paper's point: edit-only prefers a sloppy edit to a clean one; minimal change reverses that
    sloppy, clean = torch.tensor([0.9]), torch.tensor([0.8])
    assert EditOnly()(sloppy, torch.tensor([0.5])) > EditOnly()(clean, torch.tensor([0.0]))
    assert MinimalChange(1.0)(sloppy, torch.tensor([0.5])) < MinimalChange(1.0)(clean, torch.tensor([0.0]))
