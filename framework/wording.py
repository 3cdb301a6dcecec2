"""What a JSON Schema accepts and what a spec gave, in the words of validation messages:
"expected a number >= 0, got string 'a'", "Did you mean 'depth'?", hints for YAML typing
surprises (`arxiv: 1512.03385` is a number)."""

from __future__ import annotations

from typing import Any

import registry
from framework.schema_paths import node_ref


def describe(schema: Any) -> str:
    """Human text for what a JSON Schema accepts: 'a number', "one of 'a', 'b'", ..."""
    if not schema:
        return "any value"
    terms = node_ref(schema)
    if terms and terms[1] == "terms":
        return f"a mapping of term name -> {registry.KINDS[terms[0]].noun} node (each with an optional weight)"
    if "$ref" in schema:
        kind = schema["$ref"].rsplit("node.", 1)[-1]
        return f"a {registry.KINDS[kind].noun} node" if kind in registry.KINDS else "a component node"
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) if not isinstance(v, bool) else str(v).lower() for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(describe(s) for s in schema["anyOf"])
    json_type = schema.get("type")
    if json_type == "array":
        if "prefixItems" in schema:
            return f"a list of {len(schema['prefixItems'])} items"
        items = schema.get("items")
        text = f"a list of ({describe(items)})" if items else "a list"
    else:
        text = {
            "integer": "an integer",
            "number": "a number",
            "string": "a string",
            "boolean": "true or false",
            "null": "null",
            "object": "a mapping",
        }.get(json_type, str(json_type))
    rule = rule_words(schema)
    if not rule:
        return text
    if rule.startswith("must have "):
        return f"{text} with {rule.removeprefix('must have ')}"
    return f"{text} {rule.removeprefix('must be ').removeprefix('must ')}"


# JSON Schema bound keyword -> the rule in words (framework.schema.constrained writes them).
RULES = {
    "minimum": "must be >= {}",
    "exclusiveMinimum": "must be > {}",
    "maximum": "must be <= {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "must have at least {} character(s)",
    "maxLength": "must have at most {} character(s)",
    "minItems": "must have at least {} item(s)",
    "maxItems": "must have at most {} item(s)",
    "minProperties": "must have at least {} key(s)",
    "maxProperties": "must have at most {} key(s)",
}


def rule_words(schema: dict[str, Any]) -> str:
    """Every bound of a schema in plain words: 'must be >= 0 and < 1', or '' when it has none.
    (A list of a fixed length, `prefixItems`, already says its length in `describe`.)"""
    if "prefixItems" in schema:
        return ""
    rules = [template.format(number_text(schema[key])) for key, template in RULES.items() if key in schema]
    if not rules:
        return ""
    return rules[0] + "".join(" and " + r.removeprefix("must be ").removeprefix("must have ") for r in rules[1:])


def number_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else str(value)


def yaml_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{yaml_type(value)} {text}"


def typing_hint(value: Any, schema: dict[str, Any]) -> str:
    """YAML typing surprises: a number where a string was meant, and the reverse."""
    accepts = describe(schema)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "a string" in accepts:
        return f" (YAML read it as a number; quote it: '{value}')"
    if isinstance(value, str) and ("a number" in accepts or "an integer" in accepts):
        try:
            float(value)
        except ValueError:
            return ""
        return " (it is quoted, so YAML read a string; remove the quotes)"
    return ""


def close_match(word: str, options: list[str]) -> str | None:
    found = registry.close_matches(word, options)
    return found[0] if found else None


def unknown_key(owner: str, key: str, valid: list[str], what: str = "key") -> str:
    if "." in key.strip("."):  # `loss.terms.cvm.weight: 3`: an override's spelling, written in a file
        parts = key.split(".")
        nested = "".join(f"{part}: {{" for part in parts[:-1]) + f"{parts[-1]}: ..." + "}" * (len(parts) - 1)
        return (f"{owner} has no {what} '{key}': keys in a file are not dotted (a dotted key path is how "
                f"overrides and sweep axes spell it); nest them: {nested}")
    match = close_match(key, valid)
    if match:
        return f"{owner} has no {what} '{key}'. Did you mean '{match}'?"
    return f"{owner} has no {what} '{key}'. Valid {what}s: {', '.join(valid) or 'none'}."


def default_hint(value: Any, schema: dict[str, Any]) -> str:
    """For a null where the signature has a default: how to get the default."""
    if value is None and "default" in schema:
        return f" (to use the default {schema['default']!r}, delete the key)"
    return ""


def accepts_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or any(accepts_null(m) for m in schema.get("anyOf", []))


CONSTRAINTS = {
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
    "string_too_short": "must have at least {min_length} character(s)",
}


def constraint_words(error_type: str, ctx: dict[str, Any], fallback: str) -> str:
    template = CONSTRAINTS.get(error_type)
    return template.format(**ctx) if template else fallback
