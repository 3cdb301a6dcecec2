"""Component arguments checked against their JSON Schema (jsonschema, draft 2020-12), with two
rules of the spec language: an integer is a YAML integer (64.0 is not one), and NaN fails every
bound. A rejected value is reported at its place inside the argument, in `framework.wording`'s words."""

from __future__ import annotations

import math
from functools import cache
from typing import Any, Callable

from framework.errors import Path
from framework.wording import RULES, close_match, describe, got, rule_words, typing_hint


def _strict_integer(checker: Any, instance: Any) -> bool:
    """An integer is a YAML integer: 64.0 or 1e100 is a number, never silently a size."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _nan_fails(keyword: str) -> Callable[..., Any]:
    """A bound keyword that NaN fails (NaN compares false with everything, so it passes them all)."""
    import jsonschema

    check = jsonschema.Draft202012Validator.VALIDATORS[keyword]

    def nan_fails(validator: Any, bound: Any, instance: Any, schema: dict[str, Any]) -> Any:
        if isinstance(instance, float) and math.isnan(instance):
            yield jsonschema.ValidationError(f"{instance!r} is not within the bounds")
        else:
            yield from check(validator, bound, instance, schema)

    return nan_fails


@cache
def argument_validator_class() -> Any:
    """How component arguments are checked: JSON Schema 2020-12 with the two rules above."""
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        validators={k: _nan_fails(k) for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")},
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
    )


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def argument_validator(schema: dict[str, Any]) -> Any:
    """The ArgumentValidator of `schema`, built once per schema object for the whole command (the
    argument schemas live as long as the loaded registry schema; building a jsonschema validator
    costs more than most checks). The entry keeps the schema alive, so its id is never reused."""
    entry = _VALIDATORS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _VALIDATORS[id(schema)] = (schema, argument_validator_class()(schema))
    return entry[1]


def argument_problem(value: Any, schema: dict[str, Any]) -> tuple[Path, str] | None:
    """Where inside `value` (a key path relative to the argument) and why the argument's JSON
    Schema rejects it, or None when it accepts it. The outermost problem is reported; in a union
    (`int | None`) whose member of the value's type rejects it, that member's reason ("must be >= 1")."""
    from jsonschema.exceptions import best_match

    error = best_match(argument_validator(schema).iter_errors(value))
    if error is None:
        return None
    return tuple(error.path), _value_message(error.instance, error)


def _value_message(value: Any, error: Any) -> str:  # a jsonschema.ValidationError
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator in ("type", "enum", "const", "anyOf", "prefixItems"):
        message = f"expected {describe(schema)}, got {got(value)}"
        if error.validator == "enum" and isinstance(value, str):
            match = close_match(value, [str(v) for v in schema.get("enum", [])])
            if match:
                return f"{message}. Did you mean '{match}'?"
        return message + typing_hint(value, schema)
    if error.validator in RULES:
        return f"{rule_words(schema)}, got {got(value)}"
    return f"{error.message}"
