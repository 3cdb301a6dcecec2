"""Values of the operative spec that a spec does not write: the defaults a `${...}` reference may
name (`${data.n_features}` where `n_features` is the data module's default).

A reference is resolved against the spec as written (extends merged, overrides applied); a key
it names that is not written there is looked up here, as the operative spec would have it:

- a typed section's field (`trainer.max_steps`, `hardware.devices`, `seed`) takes its default
  from `framework.spec` (a section not written at all has every default);
- a component node's argument takes the default of the component its `type` names, from the
  committed schema (a component missing from it is read from its live signature), nested nodes
  included (`model.attention.rank`).

A node whose `type` is missing or unknown has no known defaults; the message says so. Only the
failure path of resolving a reference comes here: a spec whose references are all written costs
nothing more.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import registry
from framework.errors import format_path, list_index


class NotFound(KeyError):
    """The key `part` is not in the operative spec at `where`; `message` says what is there."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# What a place in the spec is: the root, a typed section (its pydantic class), a component node
# of a kind, a list of nodes of a kind, a mapping of weighted terms of a kind, or anything else.
Context = tuple[str, Any]


def _field_default(model: type[BaseModel], name: str) -> Any:
    field = model.model_fields[name]
    if field.is_required():
        raise LookupError(name)
    value = field.get_default(call_default_factory=True)
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _section_class(annotation: Any) -> type[BaseModel] | None:
    """The pydantic class of a field annotated `X` or `X | None`."""
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _child(context: Context, key: str | int, schema_of: Any) -> Context:
    """The context of the value at `key` inside a value of `context`."""
    what, detail = context
    if what == "spec":
        from framework.spec import NODE_SECTIONS, Spec

        if key in NODE_SECTIONS:
            kind, many = NODE_SECTIONS[str(key)]
            return ("nodes" if many else "node", kind)
        field = Spec.model_fields.get(str(key))
        section = _section_class(field.annotation) if field else None
        return ("section", section) if section else ("any", None)
    if what == "section":
        field = detail.model_fields.get(str(key))
        section = _section_class(field.annotation) if field else None
        return ("section", section) if section else ("any", None)
    if what == "nodes":
        return ("node", detail)
    if what == "terms":
        return ("node", detail)
    if what == "node" and schema_of is not None:
        from framework.schema_paths import node_ref

        found = node_ref(schema_of.get("properties", {}).get(str(key), {}))
        if found:
            kind, shape = found
            return ({"node": "node", "list": "nodes", "terms": "terms"}[shape], kind)
    return ("any", None)


def _component(context: Context, value: Any, schemas: Any) -> tuple[dict[str, Any] | None, str]:
    """(the node's component schema, why it has none) for a node value."""
    what, kind = context
    if what != "node" or not isinstance(value, dict):
        return None, ""
    name = value.get("type")
    noun = registry.KINDS[kind].noun
    if not isinstance(name, str):
        return None, f"its defaults are not known: it names no {noun} ('type')"
    try:
        return schemas.component(kind, name), ""
    except (LookupError, registry.UnknownComponent):
        return None, f"its defaults are not known: '{name}' is not a registered {noun}"


def _defaults(context: Context, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The defaults at a place (key -> value)."""
    what, detail = context
    if what in ("spec", "section"):
        from framework.spec import Spec

        model = Spec if what == "spec" else detail
        found = {}
        for name in model.model_fields:
            try:
                found[name] = _field_default(model, name)
            except LookupError:
                continue
        return found
    if schema is not None:
        return {k: p["default"] for k, p in schema["properties"].items() if "default" in p}
    return {}


def operative_value(data: Any, parts: list[str], schemas: Any = None) -> Any:
    """The value at key path `parts` of the operative spec of `data` (a spec as written): written
    values first, defaults where nothing is written (module docstring). Raises NotFound."""
    if schemas is None:
        from framework.schema import CommittedSchemas

        schemas = CommittedSchemas(live_fallback=True)
    node, context, path = data, ("spec", None), ()
    for part in parts:
        schema, why = _component(context, node, schemas)
        where = f"'{format_path(path)}'" if path else "the spec"
        if isinstance(node, list):
            index = list_index(part, len(node))
            if index is None or part.startswith("-"):
                raise NotFound(f"{where} is a list of {len(node)} item(s); '{part}' is not one of its indices")
            node, context, path = node[index], _child(context, index, None), (*path, index)
            continue
        if not isinstance(node, dict):
            raise NotFound(f"{where} is a {_noun(node)}, not a mapping, so it has no key '{part}'")
        defaults = _defaults(context, schema)
        if part in node:
            value = node[part]
        elif part in defaults:
            value = defaults[part]
        else:
            keys = [*node, *(k for k in defaults if k not in node)]
            hint = registry.did_you_mean(part, keys)
            shown = ", ".join(keys[:30]) + (", ..." if len(keys) > 30 else "")
            there = f" Keys there{', defaults included' if defaults else ''}: {shown}." if keys else ""
            why = f" ({why})" if why else ""
            raise NotFound(f"{where} has no key '{part}'{why}.{hint}{there}")
        node, context, path = value, _child(context, part, schema), (*path, part)
    return node


def _noun(value: Any) -> str:
    from framework.wording import yaml_type

    return yaml_type(value)
