"""`plainly_valid`, the quick one-sided check in front of jsonschema (framework/validate.py): it may
only ever say "valid" where jsonschema's ArgumentValidator says so too. Checked over every argument
schema of the committed spec.schema.json, with values on and around each of its bounds."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import framework.validate as validate
import registry
from framework.schema_files import read_defs
from framework.validate import argument_problem, argument_validator_class, plainly_valid

ROOT = Path(__file__).resolve().parents[2]

# Values of every YAML type, the edges of numbers and the usual mix-ups (1 vs 1.0 vs True vs '1').
_BASE = [None, True, False, 0, 1, -1, 2, 3, 7, 8, 16, 24, 64, 128, 10**20, 0.0, -0.0, 0.5, -0.5, 1.0, 2.0,
         1e-12, 1e300, math.inf, -math.inf, math.nan, "", "a", "1", "relu", "mean", "none", "x" * 50,
         [], [1], [0.5], [0.9, 0.999], [1, 2, 3], [16, 32], [8, 12], ["a"], [None], [[1]], {}, {"a": 1}]


def _subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for key in ("items", "additionalProperties", "propertyNames", "not"):
            yield from _subschemas(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for each in schema.get(key, ()):
                yield from _subschemas(each)


def _probes(schema: dict[str, Any]) -> list[Any]:
    """_BASE, and for each bound, enum member, const or default written in the schema: the value
    itself, its neighbours, its other spellings, and lists of those."""
    values = list(_BASE)
    for sub in _subschemas(schema):
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            bound = sub.get(key)
            if isinstance(bound, (int, float)) and not isinstance(bound, bool):
                values += [bound, bound - 1, bound + 1, bound - 0.5, bound + 0.5, float(bound), bound * 2, bound * 3]
        for key in ("minItems", "maxItems", "minLength", "maxLength"):
            if isinstance(sub.get(key), int):
                values += [[1] * n for n in range(max(sub[key] - 1, 0), sub[key] + 2)]
                values += ["a" * n for n in range(max(sub[key] - 1, 0), sub[key] + 2)]
        for member in [*sub.get("enum", ()), *([sub["const"]] if "const" in sub else [])]:
            values += [member, str(member), [member]]
            if isinstance(member, (int, float)) and not isinstance(member, bool):
                values += [float(member), member + 1]
        if "default" in sub:
            values += [sub["default"], [sub["default"]]]
    return values


def argument_schemas() -> list[dict[str, Any]]:
    """Every argument schema of every component in the committed file, each distinct one once."""
    defs = read_defs()
    seen: dict[str, dict[str, Any]] = {}
    for name, definition in defs.items():
        if name.split(".", 1)[0] not in registry.KINDS:  # node.*, term.*, editor.*: views for an editor
            continue
        for argument, schema in definition.get("properties", {}).items():
            if argument != "type":
                seen.setdefault(json.dumps(schema, sort_keys=True), schema)
    return list(seen.values())


def disagreements(schemas: list[dict[str, Any]], quick: Callable[[Any, Any], bool]) -> tuple[list, int, int]:
    """(value, schema) pairs `quick` accepts and jsonschema rejects; how many pairs `quick` accepted;
    how many jsonschema rejected."""
    wrong, accepted, rejected = [], 0, 0
    for schema in schemas:
        if "$ref" in json.dumps(schema):  # a component node: checked as a node, never by jsonschema
            continue
        validator = argument_validator_class()(schema)
        for value in _probes(schema):
            valid = validator.is_valid(value)
            rejected += not valid
            if quick(value, schema):
                accepted += 1
                if not valid:
                    wrong.append((value, schema))
    return wrong, accepted, rejected


def test_it_never_accepts_what_jsonschema_rejects() -> None:
    schemas = argument_schemas()
    wrong, accepted, rejected = disagreements(schemas, plainly_valid)
    assert not wrong, wrong[:10]
    assert len(schemas) > 300 and accepted > 3_000 and rejected > 10_000, (len(schemas), accepted, rejected)


def test_a_check_that_lets_a_bound_pass_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: with `minimum` waved through, the comparison above finds the values it lets in."""
    monkeypatch.setitem(validate._PLAIN, "minimum", lambda value, bound, schema: True)
    wrong, _, _ = disagreements(argument_schemas(), plainly_valid)
    assert any("minimum" in json.dumps(schema) for _, schema in wrong)


@pytest.mark.parametrize("value, schema", [
    (True, {"type": "integer"}),  # a boolean is never a number here
    (1.0, {"type": "integer"}),  # nor a float an integer (the strict rule)
    (math.nan, {"type": "number", "minimum": 0}),  # NaN passes no bound
    (1.0, {"enum": [1, 2]}),  # jsonschema accepts (1 == 1.0); this check leaves it to jsonschema
    (True, {"enum": [1]}),
    (0.3, {"type": "number", "multipleOf": 0.1}),  # floats: jsonschema's own arithmetic decides
    ("a", {"type": "string", "pattern": "("}),  # a pattern Python cannot read
    ({"a": 1}, {"type": "object", "required": ["b"]}),  # a keyword it does not know
    (3, {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "null"}]}),
    ([1, "a"], {"type": "array", "items": {"type": "integer"}}),
    ([2.0, 0.5], {"type": "array", "prefixItems": [{"type": "number", "maximum": 1}], "items": {"type": "number"}}),
])
def test_what_it_leaves_to_jsonschema(value: Any, schema: dict[str, Any]) -> None:
    assert not plainly_valid(value, schema)


@pytest.mark.parametrize("value, schema", [
    (3, {"type": "integer", "minimum": 0, "default": 1, "description": "steps"}),
    (None, {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "null"}], "default": None}),
    ("mean", {"enum": ["mean", "sum"]}),
    (128, {"type": "integer", "minimum": 16, "multipleOf": 16}),
    ([0.9, 0.999], {"type": "array", "prefixItems": [{"type": "number", "exclusiveMaximum": 1}] * 2,
                    "minItems": 2, "maxItems": 2}),
    ([16, 32], {"type": "array", "items": {"type": "integer", "multipleOf": 8}, "minItems": 1}),
    ("fc1", {"type": "string", "pattern": "^[a-z]"}),
])
def test_what_it_vouches_for(value: Any, schema: dict[str, Any]) -> None:
    assert plainly_valid(value, schema)
    assert argument_validator_class()(schema).is_valid(value)


def test_a_rejected_argument_keeps_jsonschemas_rule_and_words() -> None:
    assert argument_problem(0, {"type": "integer", "minimum": 1}) == ((), "must be >= 1, got integer 0")
    assert argument_problem([1, 0.5], {"type": "array", "items": {"type": "integer"}}) == \
        ((1,), "expected an integer, got number 0.5")


def test_validating_every_spec_imports_no_jsonschema() -> None:
    """Every argument of every committed spec is vouched for, in each forked share too: `exp
    validate` pays for jsonschema only when some argument needs it (a wrong one, say)."""
    probe = ("from framework import cli\n"
             "import framework.validate as v\n"
             "real = v.argument_validator_class\n"
             "def loud():\n    print('jsonschema used', flush=True); return real()\n"
             "v.argument_validator_class = loud\n"
             "try:\n    cli.main(['validate', '-q', '--no-cache', 'specs/'])\nexcept SystemExit: pass\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "spec(s) valid" in done.stdout and "jsonschema used" not in done.stdout, done.stdout
