"""Validation: a loaded spec -> the operative spec (every default filled in), or one SpecError.

Sections are checked by the pydantic types in `framework.spec`; component nodes by the JSON
Schema of the named component (from the committed schema file for `exp validate`, from live
signatures for `exp run`). Every problem is collected before raising, and each is reported with
its file:line:col, its key path, what is wrong and what would be valid.
"""

from __future__ import annotations

import difflib
from typing import Any, Protocol

import jsonschema
from pydantic import BaseModel, ValidationError

import registry
from framework.errors import Path, Problem, SpecError
from framework.loader import Loaded
from framework.spec import NODE_SLOTS, Hardware, Spec, Tracking, Trainer

_SECTIONS: dict[str, type[BaseModel]] = {"hardware": Hardware, "trainer": Trainer, "tracking": Tracking}


class Schemas(Protocol):
    def names(self, table: str) -> list[str]: ...
    def component(self, table: str, name: str) -> dict[str, Any]: ...


def describe(schema: Any) -> str:
    """Human text for what a JSON Schema accepts: 'a number', "one of 'a', 'b'", ..."""
    if not schema:
        return "any value"
    if "$ref" in schema:
        table = schema["$ref"].rsplit("node.", 1)[-1]
        return f"a {registry.KINDS[table].kind} node" if table in registry.KINDS else "a component node"
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) if not isinstance(v, bool) else str(v).lower() for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(describe(s) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        if "prefixItems" in schema:
            return f"a list of {len(schema['prefixItems'])} items"
        items = schema.get("items")
        return f"a list of ({describe(items)})" if items else "a list"
    return {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "null": "null",
        "object": "a mapping",
    }.get(kind, str(kind))


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


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{yaml_type(value)} {text}"


def _hint(value: Any, schema: dict[str, Any]) -> str:
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


def _close(word: str, options: list[str]) -> str | None:
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return found[0] if found else None


def _unknown_key(owner: str, key: str, valid: list[str], kind: str = "key") -> str:
    match = _close(key, valid)
    if match:
        return f"{owner} has no {kind} '{key}'. Did you mean '{match}'?"
    return f"{owner} has no {kind} '{key}'. Valid {kind}s: {', '.join(valid) or 'none'}."


class _Checker:
    def __init__(self, loaded: Loaded, schemas: Schemas) -> None:
        self.loaded, self.schemas = loaded, schemas
        self.problems: list[Problem] = []

    def problem(self, path: Path, message: str, at_key: bool = False) -> None:
        mark = self.loaded.key_mark(path) if at_key else self.loaded.value_mark(path)
        self.problems.append(Problem(mark, path, message))

    # -- component nodes -------------------------------------------------------------------------

    def node(self, value: Any, table: str, path: Path) -> Any:
        reg = registry.KINDS[table]
        if not isinstance(value, dict):
            self.problem(path, f"expected a {reg.kind} node (a mapping with 'type: <{reg.kind}>'), got {_got(value)}")
            return value
        name = value.get("type")
        if name is None:
            self.problem(path, f"a {reg.kind} node needs a 'type' key. Known {reg.kind}s: {', '.join(reg.names())}.", at_key=True)
            return value
        if not isinstance(name, str):
            self.problem((*path, "type"), f"expected a {reg.kind} name, got {_got(name)}")
            return value
        try:
            schema = self.schemas.component(table, name)
        except registry.UnknownComponent as error:
            self.problem((*path, "type"), error.message)
            return value
        except LookupError as error:
            self.problem((*path, "type"), str(error))
            return value
        properties: dict[str, Any] = schema["properties"]
        arguments = [p for p in properties if p != "type"]
        filled: dict[str, Any] = {"type": name}
        for key in value:
            if key != "type" and key not in properties and not schema.get("additionalProperties"):
                if key in reg.runtime:
                    self.problem((*path, key), f"'{key}' is supplied by the builder at run time; remove it from the spec", at_key=True)
                else:
                    self.problem((*path, key), _unknown_key(name, key, arguments, "argument"), at_key=True)
        for key in schema.get("required", []):
            if key not in value:
                self.problem(path, f"{name} is missing required argument '{key}' ({describe(properties[key])})", at_key=True)
        for key, prop in properties.items():
            if key == "type":
                continue
            if key in value:
                filled[key] = self.argument(value[key], prop, (*path, key))
            elif "default" in prop:
                filled[key] = prop["default"]
        for key in value:  # open-ended (**kwargs) constructors keep extra keys as given
            if key not in filled and key in value and schema.get("additionalProperties"):
                filled[key] = value[key]
        return filled

    def argument(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        nested = _node_ref(schema)
        if nested and value is not None:
            table, many = nested
            if many:
                if not isinstance(value, list):
                    self.problem(path, f"expected {describe(schema)}, got {_got(value)}")
                    return value
                return [self.node(item, table, (*path, i)) for i, item in enumerate(value)]
            return self.node(value, table, path)
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: len(e.path))
        if errors:
            error = errors[0]
            sub = (*path, *error.path)
            self.problem(sub, self._value_message(error.instance, error))
        return value

    def _value_message(self, value: Any, error: jsonschema.ValidationError) -> str:
        schema = error.schema if isinstance(error.schema, dict) else {}
        if error.validator in ("type", "enum", "const", "anyOf", "prefixItems"):
            message = f"expected {describe(schema)}, got {_got(value)}"
            if error.validator == "enum" and isinstance(value, str):
                match = _close(value, [str(v) for v in schema.get("enum", [])])
                if match:
                    return f"{message}. Did you mean '{match}'?"
            return message + _hint(value, schema)
        return f"{error.message}"

    # -- sections --------------------------------------------------------------------------------

    def sections(self, data: dict[str, Any]) -> Spec | None:
        try:
            return Spec.model_validate(data)
        except ValidationError as exc:
            seen: set[Path] = set()
            for error in exc.errors():
                self.section_error(error, data, seen)
            return None

    def section_error(self, error: Any, data: dict[str, Any], seen: set[Path]) -> None:
        loc = tuple(error["loc"])
        if loc and loc[0] in NODE_SLOTS:
            return  # component nodes are reported by `node()`, with their own messages
        kind = error["type"]
        owner_cls = _SECTIONS.get(str(loc[0])) if len(loc) > 1 else Spec
        field_path: Path = loc[:2] if owner_cls is not Spec else loc[:1]
        if field_path in seen:
            return
        seen.add(field_path)
        key = field_path[-1]
        if kind == "extra_forbidden":
            owner = "the spec" if owner_cls is Spec else f"section '{loc[0]}'"
            valid = list(owner_cls.model_fields) if owner_cls else []
            if owner_cls is Spec:
                valid.append("extends")
            self.problem(field_path, _unknown_key(owner, str(key), valid), at_key=True)
        elif kind == "missing":
            parent = field_path[:-1]
            where = "the spec" if not parent else f"section '{parent[0]}'"
            self.problem(parent, f"{where} is missing required key '{key}'", at_key=True)
        elif kind == "model_type" or kind == "model_attributes_type":
            self.problem(field_path, f"expected a mapping of {key} settings, got {_got(error['input'])}")
        else:
            value = _get(data, field_path)
            schema = _field_schema(field_path)
            if kind.endswith(("_type", "_parsing")) or kind in ("literal_error", "enum", "union_tag_invalid"):
                message = f"expected {describe(schema)}, got {_got(value)}"
                match = _close(value, [str(v) for v in schema.get("enum", [])]) if isinstance(value, str) else None
                message += f". Did you mean '{match}'?" if match else _hint(value, schema)
            else:
                message = f"{_constraint(kind, error.get('ctx') or {}, error['msg'])}, got {_got(value)}"
                if kind == "value_error":  # a model validator's own message says it all
                    message = error["msg"].removeprefix("Value error, ")
            self.problem(field_path, message)


_CONSTRAINTS = {
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
    "string_too_short": "must have at least {min_length} character(s)",
}


def _constraint(kind: str, ctx: dict[str, Any], fallback: str) -> str:
    template = _CONSTRAINTS.get(kind)
    return template.format(**ctx) if template else fallback


def _get(data: Any, path: Path) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


_SPEC_SCHEMA: dict[str, Any] | None = None


def _field_schema(path: Path) -> dict[str, Any]:
    global _SPEC_SCHEMA
    if _SPEC_SCHEMA is None:
        _SPEC_SCHEMA = Spec.model_json_schema()
    schema = _SPEC_SCHEMA
    if len(path) == 1:
        return schema["properties"].get(str(path[0]), {})
    section = _SECTIONS[str(path[0])].__name__
    return schema["$defs"][section]["properties"].get(str(path[1]), {})


def _node_ref(schema: dict[str, Any]) -> tuple[str, bool] | None:
    """(table, is_list) when the argument holds component node(s)."""
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/node."):
        return ref.rsplit("node.", 1)[1], False
    items = schema.get("items") if schema.get("type") == "array" else None
    if isinstance(items, dict) and items.get("$ref", "").startswith("#/$defs/node."):
        return items["$ref"].rsplit("node.", 1)[1], True
    for member in schema.get("anyOf", []):
        found = _node_ref(member)
        if found:
            return found
    return None


def validate(loaded: Loaded, schemas: Schemas) -> dict[str, Any]:
    """Check a loaded spec; return the operative spec or raise one SpecError with every problem."""
    checker = _Checker(loaded, schemas)
    data = loaded.data
    if not isinstance(data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), "a spec must be a mapping of sections")])
    spec = checker.sections(data)
    nodes: dict[str, Any] = {}
    for field, (table, many) in NODE_SLOTS.items():
        value = data.get(field)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                checker.problem((field,), f"expected a list of {registry.KINDS[table].kind} nodes, got {_got(value)}")
                continue
            nodes[field] = [checker.node(item, table, (field, i)) for i, item in enumerate(value)]
        else:
            nodes[field] = checker.node(value, table, (field,))
    if checker.problems or spec is None:
        raise SpecError(sorted(checker.problems, key=_order))
    operative = spec.model_dump(mode="json")
    operative.update(nodes)
    return operative


def _order(problem: Problem) -> tuple[int, str, int, int]:
    """File problems by file, line, column; override problems after them, in spec order (stable)."""
    mark = problem.mark
    if mark is None or mark.line is None:
        return (1, "", 0, 0)
    return (0, mark.source, mark.line, mark.column or 0)
