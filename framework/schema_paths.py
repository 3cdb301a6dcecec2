"""Walking the spec's JSON Schema: the schema at a key path of a spec, and where an argument holds
component nodes (one, a list, or a weighted mapping of named terms)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from framework.errors import Path
from framework.spec import Hardware, Spec, Tracking, Trainer

# The typed sections whose fields are checked one key deep (others nest: `framework.section_errors`).
SECTIONS: dict[str, type[BaseModel]] = {"hardware": Hardware, "trainer": Trainer, "tracking": Tracking}


def value_at(data: Any, path: Path) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


_SPEC_SCHEMA: dict[str, Any] | None = None


def field_schema(path: Path) -> dict[str, Any]:
    global _SPEC_SCHEMA
    if _SPEC_SCHEMA is None:
        _SPEC_SCHEMA = Spec.model_json_schema()
    schema = _SPEC_SCHEMA
    if len(path) == 1:
        return schema["properties"].get(str(path[0]), {})
    section = SECTIONS[str(path[0])].__name__
    return schema["$defs"][section]["properties"].get(str(path[1]), {})


def schema_at(path: Path) -> dict[str, Any]:
    """The JSON Schema of the spec at `path` ($refs followed; in a union, the member that has the
    next key), or {} where it cannot be told."""
    global _SPEC_SCHEMA
    if _SPEC_SCHEMA is None:
        _SPEC_SCHEMA = Spec.model_json_schema()
    defs = _SPEC_SCHEMA.get("$defs", {})

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return schema

    schema = _SPEC_SCHEMA
    for part in path:
        schema = resolve(schema)
        members = [resolve(m) for m in schema.get("anyOf", [schema])]
        if isinstance(part, int):
            found = next((m["items"] for m in members if "items" in m), None)
        else:
            found = next((m["properties"][part] for m in members if part in m.get("properties", {})), None)
            found = found or next((m["additionalProperties"] for m in members
                                   if isinstance(m.get("additionalProperties"), dict)), None)
        if found is None:
            return {}
        schema = found
    schema = resolve(schema)
    members = [resolve(m) for m in schema.get("anyOf", [])]
    return {"anyOf": members} if members else schema


def node_ref(schema: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, shape) when the argument holds component node(s): shape "node" (one node), "list"
    (a list of nodes) or "terms" (a weighted mapping of named nodes, `framework.schema.terms_schema`)."""
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/node."):
        return ref.rsplit("node.", 1)[1], "node"
    items = schema.get("items") if schema.get("type") == "array" else None
    if isinstance(items, dict) and items.get("$ref", "").startswith("#/$defs/node."):
        return items["$ref"].rsplit("node.", 1)[1], "list"
    terms = terms_member(schema)
    if terms:
        extra = terms["additionalProperties"]
        refs = [str(m.get("$ref", "")) for m in extra.get("anyOf", [extra])]
        return next(r for r in refs if r.startswith("#/$defs/term.")).removeprefix("#/$defs/term."), "terms"
    for member in schema.get("anyOf", []):
        found = node_ref(member)
        if found:
            return found
    return None


def terms_member(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The weighted-mapping schema itself, or the member of an `anyOf` (e.g. Optional) that is one."""
    extra = schema.get("additionalProperties") if schema.get("type") == "object" else None
    if isinstance(extra, dict) and any(str(m.get("$ref", "")).startswith("#/$defs/term.")
                                       for m in extra.get("anyOf", [extra])):
        return schema
    for member in schema.get("anyOf", []):
        found = terms_member(member)
        if found:
            return found
    return None
