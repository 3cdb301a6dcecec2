"""framework/schema.py: annotations -> JSON Schema; the committed schema is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest

from components.kinds import Loss, WeightedLosses
from framework.schema import SCHEMA_PATH, _NO_JSON, build_schema, term_definition, type_schema


@pytest.mark.parametrize(
    "annotation, schema",
    [
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (str, {"type": "string"}),
        (Path, {"type": "string"}),
        (Literal["a", "b"], {"enum": ["a", "b"]}),
        (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[float, float], {"type": "array", "prefixItems": [{"type": "number"}] * 2, "minItems": 2, "maxItems": 2}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (Loss, {"$ref": "#/$defs/node.losses"}),
        (list[Loss], {"type": "array", "items": {"$ref": "#/$defs/node.losses"}}),
        (WeightedLosses, {"type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z][a-z0-9_]*$"},
                          "additionalProperties": {"anyOf": [{"$ref": "#/$defs/term.losses"}, {"type": "null"}]}}),
        (Any, {}),
        (object, _NO_JSON),
        (float | object, {"type": "number"}),
    ],
    ids=lambda v: "no-json" if v is _NO_JSON else str(v)[:30],
)
def test_type_schema(annotation: Any, schema: Any) -> None:
    assert type_schema(annotation) == schema


def test_committed_schema_is_current() -> None:
    """Fails when a component or section changed without `exp schema` (then commit the file)."""
    assert SCHEMA_PATH.is_file(), "run `exp schema`"
    assert json.loads(SCHEMA_PATH.read_text()) == build_schema(), "stale: run `exp schema` and commit it"


SPEC = {"name": "s", "paper": "demo", "task": {"type": "classification"}}


@pytest.mark.parametrize(
    "loss, valid",
    [
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "weight": 2.0}}}, True),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy"}, "cvm": None}}, True),
        ({"type": "weighted_sum", "terms": {"fair": {"type": "weighted_sum", "weight": 0.5,
                                                    "terms": {"cvm": {"type": "cvm_dependence", "weight": 3.0}}}}}, True),
        ({"type": "cross_entropy", "weight": 2.0}, False),
        ({"type": "weighted_sum", "weight": 2.0, "terms": {"ce": {"type": "cross_entropy"}}}, False),
        ({"type": "weighted_sum", "terms": [{"type": "cross_entropy"}]}, False),
        ({"type": "weighted_sum", "terms": {}}, False),
        ({"type": "weighted_sum", "terms": {"1": {"type": "cross_entropy"}}}, False),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "weight": -1.0}}}, False),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "wieght": 1.0}}}, False),
    ],
    ids=["term weight", "null term", "nested sum", "lone loss weight", "weight on the sum", "terms as a list",
         "no terms", "numbered term", "negative weight", "misspelled weight"],
)
def test_committed_schema_puts_weight_in_terms_only(loss: dict, valid: bool) -> None:
    """Editors read the committed schema: it accepts `weight` inside a term and nowhere else."""
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    assert validator.is_valid({**SPEC, "loss": loss}) == valid


def test_a_loss_argument_named_weight_cannot_be_a_term() -> None:
    component = {"title": "loss 'x'", "x-target": "m:X", "properties": {"type": {"const": "x"}, "weight": {}}}
    with pytest.raises(ValueError) as info:
        term_definition(component)
    assert str(info.value) == ("m:X takes an argument 'weight', which a term of a weighted sum uses for its own "
                               "weight; rename the argument")
