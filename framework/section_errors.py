"""pydantic's errors for the typed sections of a spec (`hardware`, `trainer`, `init`, `sweep`, ...)
translated into located problems in the words of `framework.wording`: the key path the spec
writes (pydantic's locations also name union members and validators), what is valid, what was given."""

from __future__ import annotations

from typing import Any, Callable

import registry
from framework.errors import Path, format_path
from framework.schema_paths import SECTIONS, field_schema, schema_at, value_at
from framework.spec import NODE_SECTIONS, Spec
from framework.wording import CONSTRAINTS, close_match, constraint_words, describe, got, typing_hint, unknown_key

# report(key path, message, at_key): a problem at the value at that path, or at its key.
Report = Callable[..., None]


def section_error(report: Report, error: Any, data: dict[str, Any], seen: set[Path]) -> None:
    """One pydantic error of the typed sections as a located problem, each key path once (`seen`)."""
    loc = tuple(error["loc"])
    if loc and loc[0] in NODE_SECTIONS:
        if data.get(str(loc[0])) is None and len(loc) == 1:  # missing or null: `node()` skips it
            missing_node(report, str(loc[0]), error["type"] == "missing")
        return  # component nodes are reported by `node()`, with their own messages
    error_type = error["type"]
    if len(loc) > 1 and str(loc[0]) not in SECTIONS:
        nested_error(report, error, data, seen)  # init, sweep, phases: typed, nested deeper
        return
    owner_cls = SECTIONS.get(str(loc[0])) if len(loc) > 1 else Spec
    field_path: Path = loc[:2] if owner_cls is not Spec else loc[:1]
    if field_path in seen:
        return
    seen.add(field_path)
    key = field_path[-1]
    if error_type == "extra_forbidden":
        owner = "the spec" if owner_cls is Spec else f"section '{loc[0]}'"
        valid = list(owner_cls.model_fields) if owner_cls else []
        if owner_cls is Spec:
            valid.append("extends")
        report(field_path, unknown_key(owner, str(key), valid), at_key=True)
    elif error_type == "missing":
        parent = field_path[:-1]
        where = "the spec" if not parent else f"section '{parent[0]}'"
        report(parent, f"{where} is missing required key '{key}'", at_key=True)
    elif error_type == "model_type" or error_type == "model_attributes_type":
        report(field_path, f"expected a mapping of {key} settings, got {got(error['input'])}")
    else:
        value = value_at(data, field_path)
        schema = field_schema(field_path)
        # A union (`max_steps`: an integer >= 1 or -1) is described whole, whichever member failed first.
        if (error_type.endswith(("_type", "_parsing")) or error_type in ("literal_error", "enum", "union_tag_invalid")
                or "anyOf" in schema and error_type != "value_error"):
            message = f"expected {describe(schema)}, got {got(value)}"
            match = close_match(value, [str(v) for v in schema.get("enum", [])]) if isinstance(value, str) else None
            message += f". Did you mean '{match}'?" if match else typing_hint(value, schema)
        else:
            message = f"{constraint_words(error_type, error.get('ctx') or {}, error['msg'])}, got {got(value)}"
            if error_type == "value_error":  # a model validator's own message says it all
                message = error["msg"].removeprefix("Value error, ")
        report(field_path, message)


def missing_node(report: Report, field: str, missing: bool) -> None:
    """A required node section (`task`) that is missing, or null."""
    if missing:
        report((), f"the spec is missing required key '{field}'", at_key=True)
    else:
        noun = registry.KINDS[NODE_SECTIONS[field][0]].noun
        report((field,), f"expected a {noun} node (a mapping with 'type: <{noun}>'), got null")


def nested_error(report: Report, error: Any, data: dict[str, Any], seen: set[Path]) -> None:
    """An error inside a typed section that nests (`init.stage`, `sweep.grid`, `phases.1`):
    reported at the deepest part of its location that the spec has (pydantic adds the names
    of union members and validators to a location; they are not keys)."""
    loc = tuple(error["loc"])
    path: Path = ()
    for part in loc:
        node = value_at(data, path)
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int):
            path = (*path, part)
        elif error["type"] in ("extra_forbidden", "missing") and isinstance(node, dict) and part == loc[-1]:
            path = (*path, part)
    if path in seen:
        return
    seen.add(path)
    value, key = value_at(data, path), path[-1]
    if error["type"] == "extra_forbidden":
        owner = schema_at(path[:-1])
        valid = [k for m in [owner, *owner.get("anyOf", [])] for k in m.get("properties", {})]
        report(path, unknown_key(f"'{format_path(path[:-1])}'", str(key), valid), at_key=True)
    elif error["type"] == "missing":
        report(path[:-1], f"'{format_path(path[:-1])}' is missing required key '{key}'", at_key=True)
    elif error["type"] == "value_error":  # a model validator's own message says it all
        report(path, error["msg"].removeprefix("Value error, "))
    else:
        schema = schema_at(path)
        accepts = describe(schema) if schema else error["msg"].lower()
        message = f"expected {accepts}, got {got(value)}"
        match = close_match(value, [str(v) for v in schema.get("enum", [])]) if isinstance(value, str) else None
        if error["type"] in CONSTRAINTS:
            message = f"{constraint_words(error['type'], error.get('ctx') or {}, error['msg'])}, got {got(value)}"
        report(path, message + (f". Did you mean '{match}'?" if match else ""))
