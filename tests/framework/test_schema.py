"""framework/schema.py: annotations -> JSON Schema; the committed schema is current."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from components.kinds import Loss
from framework.schema import SCHEMA_PATH, _NO_JSON, build_schema, type_schema


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
