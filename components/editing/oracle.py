"""The tiny reward model: an oracle classifier of the five shape factors, and the edit judgement
read from it.

The paper scores an edit with a vision-language model that reasons about two failure modes,
*unimplemented* changes and *unintended* changes. At tiny scale the factors are known, so a
classifier trained on them plays the judge. For a source image s, its edit e and the instruction
"set factor k to value v" (the oracle's factor-j distribution on an image is p_j(. | image)):

    implemented = p_k(v | e)                                    in [0, 1]
    unintended  = mean over j != k of (1 - p_j(c_j | e)),       c_j = argmax p_j(. | s)

i.e. the probability that the edit did what was asked, and the mean probability that another
factor no longer reads what it read before. Their hard versions are the metrics: edit success
(argmax_k(e) == v) and the unintended-change rate (share of the other factors whose argmax moved).
"""

from __future__ import annotations

import torch
from torch import nn

from components.editing.shapes import CARDINALITIES
from components.types import PositiveInt


class FactorOracle(nn.Module):
    """Conv net with one softmax head per factor; not translation invariant (it must read x, y).

    Two stride-2 3x3 convolutions (16x16 -> 4x4), a hidden layer and a linear layer emitting the
    concatenated logits of the factors (`CARDINALITIES`: 3, 3, 3, 3, 2).

    Args:
        in_channels: Image channels.
        channels: Width of the two convolutions.
        hidden: Width of the hidden layer.
    """

    def __init__(self, in_channels: PositiveInt = 3, channels: PositiveInt = 16, hidden: PositiveInt = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(channels * 16, hidden), nn.ReLU(), nn.Linear(hidden, sum(CARDINALITIES)))

    def forward(self, images: torch.Tensor) -> list[torch.Tensor]:
        """(B, C, 16, 16) -> one (B, cardinality) logit tensor per factor."""
        return list(self.net(images).split(CARDINALITIES, dim=1))

    def loss(self, images: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        """Sum over factors of the cross-entropy against the (B, 5) factor values."""
        return sum(nn.functional.cross_entropy(logits, factors[:, j]) for j, logits in enumerate(self(images)))

    def predict(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 5) argmax factor values."""
        return torch.stack([logits.argmax(1) for logits in self(images)], dim=1)


def judge(oracle: FactorOracle, source: torch.Tensor, edited: torch.Tensor, edit_factor: torch.Tensor,
          edit_value: torch.Tensor) -> dict[str, torch.Tensor]:
    """The edit judgement of the module docstring for B sources and their B edits (a source may
    be repeated, one row per edit): soft `implemented`, `unintended` (B,), and hard `success`,
    `unintended_rate` (B,)."""
    rows = torch.arange(len(edited), device=edited.device)
    before = oracle.predict(source)
    probs = [logits.softmax(1) for logits in oracle(edited)]
    after = torch.stack([p.argmax(1) for p in probs], dim=1)
    kept = torch.stack([p[rows, before[:, j]] for j, p in enumerate(probs)], dim=1)  # (B, 5)
    asked = torch.stack([p.gather(1, edit_value.clamp(max=p.shape[1] - 1)[:, None])[:, 0] for p in probs], dim=1)
    target = nn.functional.one_hot(edit_factor, len(CARDINALITIES)).bool()
    others = (~target).float()
    moved = (after != before).float()
    return {
        "implemented": asked[rows, edit_factor],
        "unintended": ((1 - kept) * others).sum(1) / others.sum(1),
        "success": (after[rows, edit_factor] == edit_value).float(),
        "unintended_rate": (moved * others).sum(1) / others.sum(1),
    }
