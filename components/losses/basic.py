"""Standard supervised losses and the weighted sum that combines loss terms.

Every loss is an nn.Module built with the spec's arguments, stores its `weight` (applied only by
`WeightedSum`), and is called as loss(outputs, batch) -> unweighted scalar tensor, where batch is
the data module's dict ("y", and "group" where the data has one). Each class has a snake_case
`name`, the key its value is logged under inside a weighted sum.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

from components.kinds import Loss


def _check_weight(weight: float) -> float:
    if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight}")
    return float(weight)


def snake_case(class_name: str) -> str:
    """'CrossEntropy' -> 'cross_entropy', 'MSE' -> 'mse', 'HSICLoss' -> 'hsic_loss'."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", class_name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text).lower()


def _match_target(outputs: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Reshape single-column outputs (N, 1) to y's shape (N,); any other mismatch is an error."""
    if outputs.shape == y.shape:
        return outputs
    if outputs.numel() == y.numel() and outputs.shape[0] == y.shape[0]:
        return outputs.reshape(y.shape)
    raise ValueError(
        f"{loss}: outputs of shape {tuple(outputs.shape)} do not match targets of shape {tuple(y.shape)}"
    )


class CrossEntropy(nn.Module):
    """Softmax cross-entropy of logits (N, C) against long class labels y (N,).

    Args:
        weight: Factor applied by weighted_sum, >= 0.
        label_smoothing: Probability mass spread uniformly over all classes, in [0, 1).
    """

    name = "cross_entropy"

    def __init__(self, weight: float = 1.0, label_smoothing: float = 0.0) -> None:
        super().__init__()
        self.weight = _check_weight(weight)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        self.label_smoothing = label_smoothing

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(outputs, batch["y"].long(), label_smoothing=self.label_smoothing)


class MSE(nn.Module):
    """Mean squared error of predictions against float targets; outputs (N, 1) match y (N,).

    Args:
        weight: Factor applied by weighted_sum, >= 0.
    """

    name = "mse"

    def __init__(self, weight: float = 1.0) -> None:
        super().__init__()
        self.weight = _check_weight(weight)

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        y = batch["y"]
        return F.mse_loss(_match_target(outputs, y, self.name), y.to(outputs.dtype))


class BCE(nn.Module):
    """Binary cross-entropy of one logit per row, (N, 1) or (N,), against y in {0, 1}.

    Args:
        weight: Factor applied by weighted_sum, >= 0.
        pos_weight: Factor on the loss of positive examples (> 0), e.g. n_negative / n_positive
            for imbalanced data; None for 1.
    """

    name = "bce"

    def __init__(self, weight: float = 1.0, pos_weight: float | None = None) -> None:
        super().__init__()
        self.weight = _check_weight(weight)
        if pos_weight is not None and not pos_weight > 0:
            raise ValueError(f"pos_weight must be > 0 or None, got {pos_weight}")
        self.pos_weight = pos_weight

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        y = batch["y"]
        logits = _match_target(outputs, y, self.name)
        pos_weight = None
        if self.pos_weight is not None:
            pos_weight = torch.tensor(self.pos_weight, dtype=logits.dtype, device=logits.device)
        return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), pos_weight=pos_weight)


class WeightedSum(nn.Module):
    """Sum of loss terms, each scaled by its own `weight`: sum_i terms[i].weight * terms[i](...).

    After each call, `last_terms` maps each term's name to its unweighted value (detached), for
    the task to log. Names are the terms' `name` attribute (snake_case class name otherwise);
    a repeated name gets a suffix from its second occurrence on: cross_entropy, cross_entropy_1,
    cross_entropy_2.

    Args:
        terms: The loss terms, at least one.
        weight: Factor applied when this sum is itself a term of another weighted_sum, >= 0.
    """

    name = "weighted_sum"

    def __init__(self, terms: list[Loss], weight: float = 1.0) -> None:
        super().__init__()
        self.weight = _check_weight(weight)
        if len(terms) == 0:
            raise ValueError("terms must hold at least one loss, got []")
        names: list[str] = []
        for index, term in enumerate(terms):
            term_weight = getattr(term, "weight", None)
            if isinstance(term_weight, bool) or not isinstance(term_weight, (int, float)):
                raise ValueError(
                    f"terms[{index}] ({type(term).__name__}) needs a float attribute 'weight', "
                    f"got {term_weight!r}"
                )
            base = getattr(term, "name", None) or snake_case(type(term).__name__)
            name, suffix = base, 0
            while name in names:
                suffix += 1
                name = f"{base}_{suffix}"
            names.append(name)
        self.terms = nn.ModuleList(terms)
        self.term_names = names
        self.last_terms: dict[str, torch.Tensor] = {}

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        total: torch.Tensor | None = None
        last: dict[str, torch.Tensor] = {}
        for name, term in zip(self.term_names, self.terms):
            value = term(outputs, batch)
            last[name] = value.detach()
            total = term.weight * value if total is None else total + term.weight * value
        self.last_terms = last
        assert total is not None  # terms is non-empty
        return total
