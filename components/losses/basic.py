"""Standard supervised losses and the weighted sum that combines loss terms.

Every loss is an nn.Module built with the spec's arguments and called as loss(outputs, batch) ->
scalar tensor, where batch is the data module's dict ("y", and "group" where the data has one). A
loss has no weight of its own: weights belong to the named terms of `WeightedSum`. Each class has a
snake_case `name`, its registry name, used in its error messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from components.kinds import Kind, WeightedLosses
from components.types import PositiveFloat, ProperFraction


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
        label_smoothing: Probability mass spread uniformly over all classes, in [0, 1).
    """

    name = "cross_entropy"

    def __init__(self, label_smoothing: ProperFraction = 0.0) -> None:
        super().__init__()
        self.label_smoothing = label_smoothing

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(outputs, batch["y"].long(), label_smoothing=self.label_smoothing)


class MSE(nn.Module):
    """Mean squared error of predictions against float targets; outputs (N, 1) match y (N,)."""

    name = "mse"

    def __init__(self) -> None:  # no arguments (nn.Module's own signature would take **kwargs)
        super().__init__()

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        y = batch["y"]
        return F.mse_loss(_match_target(outputs, y, self.name), y.to(outputs.dtype))


class BCE(nn.Module):
    """Binary cross-entropy of one logit per row, (N, 1) or (N,), against y in {0, 1}.

    Args:
        pos_weight: Factor on the loss of positive examples (> 0), e.g. n_negative / n_positive
            for imbalanced data; None for 1.
    """

    name = "bce"

    def __init__(self, pos_weight: PositiveFloat | None = None) -> None:
        super().__init__()
        self.pos_weight = pos_weight

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        y = batch["y"]
        logits = _match_target(outputs, y, self.name)
        pos_weight = None
        if self.pos_weight is not None:
            pos_weight = torch.tensor(self.pos_weight, dtype=logits.dtype, device=logits.device)
        return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), pos_weight=pos_weight)


class WeightedSum(nn.Module):
    """Sum of named loss terms, each scaled by its weight: sum over names of weight * term(...).

    Python interface: one mapping ``terms = {name: (weight, loss)}``, in the order the terms are
    summed, e.g. from a notebook ``WeightedSum({"ce": (1.0, CrossEntropy()), "cvm": (2.0,
    CvMDependence())})``. Each weight sits beside its term, as in a spec, so there are no two
    mappings whose names could disagree and no weight stored on the losses themselves. In a spec
    the same mapping reads ``terms: {ce: {type: cross_entropy}, cvm: {type: cvm_dependence,
    weight: 2.0}}`` (weight defaults to 1.0; the builder builds each node and pairs it with its
    weight). Names, not positions, identify a term, so `loss.terms.cvm.weight` keeps meaning the
    CvM term however the terms are ordered.

    After each call, `last_terms` maps each term's name to its unweighted value (detached), for
    the task to log as ``<split>/loss.<name>``; a term that is itself a weighted sum adds its own
    terms as ``<name>.<its term>``.

    Args:
        terms: name -> (weight, loss), at least one; names are lower_snake_case, weights finite
            numbers >= 0.
    """

    name = "weighted_sum"

    def __init__(self, terms: WeightedLosses) -> None:
        super().__init__()
        if not isinstance(terms, Mapping) or len(terms) == 0:
            raise ValueError(f"terms must map at least one name to (weight, loss), got {terms!r}")
        names, weights, losses = [], [], []
        for name, entry in terms.items():
            if not isinstance(name, str) or not re.match(Kind.TERM_NAME, name):
                raise ValueError(f"term names must be lower_snake_case, got {name!r}")
            if not (isinstance(entry, tuple) and len(entry) == 2 and callable(entry[1])):
                raise ValueError(f"terms['{name}'] must be a (weight, loss) pair, got {entry!r}")
            weight, loss = entry
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                    or not math.isfinite(weight) or weight < 0:
                raise ValueError(f"the weight of term '{name}' must be a finite number >= 0, got {weight!r}")
            names.append(name)
            weights.append(float(weight))
            losses.append(loss)
        # A list, not an nn.ModuleDict: term names such as `train` or `type` would shadow
        # ModuleDict's own attributes; the list also keeps state-dict keys as they were.
        self.terms = nn.ModuleList(losses)
        self.term_names: list[str] = names
        self.weights: dict[str, float] = dict(zip(names, weights))
        self.last_terms: dict[str, torch.Tensor] = {}

    def forward(self, outputs: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        total: torch.Tensor | None = None
        last: dict[str, torch.Tensor] = {}
        for name, term in zip(self.term_names, self.terms):
            value = term(outputs, batch)
            last[name] = value.detach()
            for sub, sub_value in getattr(term, "last_terms", {}).items():
                last[f"{name}.{sub}"] = sub_value
            weighted = self.weights[name] * value
            total = weighted if total is None else total + weighted
        self.last_terms = last
        assert total is not None  # terms is non-empty
        return total
