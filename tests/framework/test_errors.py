"""framework/errors.py: a key path has one spelling, the one overrides and MLflow params use."""

from __future__ import annotations

import pytest

from framework.errors import Mark, Problem, SpecError, format_path
from framework.loader import apply_overrides
from framework.marked_yaml import parse_yaml
from framework.tracking import flatten


@pytest.mark.parametrize(
    "path, text",
    [
        ((), "<root>"),
        (("model",), "model"),
        (("metrics", 1, "type"), "metrics.1.type"),
        (("loss", "terms", "cvm", "weight"), "loss.terms.cvm.weight"),
        (("loss", "terms", "fair", "terms", "cvm", "weight"), "loss.terms.fair.terms.cvm.weight"),
    ],
    ids=["root", "section", "list item", "named term", "nested term"],
)
def test_format_path(path: tuple, text: str) -> None:
    assert format_path(path) == text


def test_problem_and_error_text() -> None:
    problem = Problem(Mark("s.yaml", 3, 5), ("metrics", 0, "type"), "unknown metric 'acc'")
    assert str(problem) == "s.yaml:3:5: metrics.0.type: unknown metric 'acc'"
    assert str(SpecError([problem])) == "1 problem in spec:\n  s.yaml:3:5: metrics.0.type: unknown metric 'acc'"


def test_message_param_and_override_spell_a_path_alike() -> None:
    """Every MLflow param key is the path a message prints and an override that sets that value."""
    text = ("metrics: [{type: accuracy}, {type: auroc, average: macro}]\n"
            "loss: {type: weighted_sum, terms: {ce: {type: cross_entropy, weight: 1.0}}}\n")
    params = flatten(parse_yaml(text, "s.yaml").data)
    assert sorted(params) == ["loss.terms.ce.type", "loss.terms.ce.weight", "loss.type",
                              "metrics.0.type", "metrics.1.average", "metrics.1.type"]
    for key in params:
        loaded = parse_yaml(text, "s.yaml")
        apply_overrides(loaded, [f"{key}=changed"])
        changed = [k for k, v in flatten(loaded.data).items() if v == "changed"]
        assert changed == [key]
        assert format_path(next(p for p, m in loaded.value_marks.items() if m.source.startswith("override"))) == key
