"""The editor's view of the spec schema: what yaml-language-server (VS Code's YAML extension) reads.

`exp validate` reads only the component definitions of the committed schema (`<kind>.<name>`),
after the loader has merged `extends:` and resolved `${...}` references. An editor sees one file as
written, so the schema's root and the definitions it reaches (`editor.*`) say what a file may
hold before that:

- A file with `extends:` is partial: nothing is required in it (`name`, `paper`, a node's `type`
  and its required arguments come from the base). A file without `extends:` must give `name`,
  `paper`, and for each top-level component node (`task`, `model`, the items of `metrics`, ...)
  its `type` and that component's required arguments (`editor.complete.node.<kind>`). Nested
  nodes (a node inside an argument, a term of `weighted_sum`) never require anything in the editor:
  `exp validate` checks them.
- A component's rules apply only to a node whose `type` names it (`if: {required: [type], ...}`):
  without the `required`, `if` also matches a node with no `type`, and every component's rules
  applied at once. The name is matched by `const` and by an anchored `pattern`: while completing,
  yaml-language-server takes a `const` as matched by any prefix of it, so `type: mlp` would be
  offered `mlp_mixer`'s arguments too; a pattern it checks exactly.
- Wherever a value may be written, a string holding a `${...}` reference is accepted too (the
  loader replaces it before validation): `seed: ${seed}`, `source: ${data}`.
- Each argument carries its description from the component's docstring (`Args:`), for hover.

The definitions `validate`, `explain` and the tests read (`<kind>.<name>`, `node.<kind>`,
`term.<kind>.<name>`, the pydantic sections) are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

REFERENCE = {"type": "string", "pattern": r"\$\{[^}]*\}",
             "description": "a ${key.path} reference, replaced by the value at that key path of the spec"}
# Keywords that describe a value rather than constrain it: kept on the outside of a wrapper.
_ANNOTATIONS = ("title", "description", "default")


def allow_reference(schema: Any) -> Any:
    """`schema`, or a string with a `${...}` reference in it."""
    if not isinstance(schema, dict) or not schema or schema.get("$ref") == "#/$defs/editor.reference":
        return schema
    if set(schema) <= set(_ANNOTATIONS):  # any value already
        return schema
    outer = {k: schema[k] for k in _ANNOTATIONS if k in schema}
    inner = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    if set(inner) == {"anyOf"}:
        return {**outer, "anyOf": [*inner["anyOf"], {"$ref": "#/$defs/editor.reference"}]}
    return {**outer, "anyOf": [inner, {"$ref": "#/$defs/editor.reference"}]}


def _editor_ref(ref: str) -> str:
    """A reference to a definition -> the same definition's editor view."""
    name = ref.removeprefix("#/$defs/")
    return ref if name.startswith("editor.") else f"#/$defs/editor.{name}"


def editor_view(schema: Any) -> Any:
    """A schema with every value position accepting a reference and every `$ref` pointing at the
    editor's definitions. `required` lists are kept (components drop theirs: `_partial_component`)."""
    if isinstance(schema, list):
        return [editor_view(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            out[key] = _editor_ref(value)
        elif key == "properties":
            out[key] = {name: prop if name == "type" else allow_reference(editor_view(prop))
                        for name, prop in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = allow_reference(editor_view(value))
        elif key == "prefixItems":
            out[key] = [allow_reference(editor_view(item)) for item in value]
        elif key in ("anyOf", "allOf", "oneOf", "then", "else", "not"):
            out[key] = editor_view(value)
        elif key.startswith("x-"):
            continue  # the target and inherited bases are for `exp explain`, not for the editor
        else:
            out[key] = value
    return out


def _partial_component(name: str, component: dict[str, Any], descriptions: dict[str, str]) -> dict[str, Any]:
    """A component's editor definition `editor.<name>`: nothing required, each argument described
    (see the module docstring). An argument that holds no component node points at the argument's
    schema in `<name>` (the file stays small: `exp validate` reads all of it), one that does is
    copied with its `$ref`s turned to the editor's nodes."""
    properties: dict[str, Any] = {}
    for argument, prop in component["properties"].items():
        if argument == "type" or set(prop) <= set(_ANNOTATIONS):
            view = dict(prop)
        elif _holds_node(prop):
            view = allow_reference(editor_view(prop))
        else:
            view = allow_reference({"$ref": f"#/$defs/{name}/properties/{argument}"})
        if descriptions.get(argument):
            view["description"] = descriptions[argument]
        properties[argument] = view
    return {k: v for k, v in {**component, "properties": properties}.items()
            if k != "required" and not k.startswith("x-")}


def _holds_node(schema: Any) -> bool:
    """Whether a schema refers to a component node or term definition anywhere inside."""
    if isinstance(schema, dict):
        ref = str(schema.get("$ref", ""))
        return ref.startswith(("#/$defs/node.", "#/$defs/term.")) or any(_holds_node(v) for v in schema.values())
    return isinstance(schema, list) and any(_holds_node(v) for v in schema)


def partial_node(kind: str, names: list[str], defs: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`editor.<prefix>node.<kind>`: `type` one of the kind's names, then that component's rules.
    A node without `type` (its base spec gives it) may hold any argument of any of the kind's
    components, so that a misspelled key is still flagged."""
    components = {f"editor.{prefix}{kind}.{n}": defs[f"{prefix}{kind}.{n}"] for n in names}
    arguments = sorted({a for c in components.values() for a in c["properties"]} - {"type"})
    open_ended = any(c.get("additionalProperties") for c in components.values())
    untyped = [] if open_ended else [{"if": {"not": {"required": ["type"]}},
                                      "then": {"properties": {a: _common(a, components) for a in arguments},
                                               "additionalProperties": False}}]
    return {
        "type": "object",
        "properties": {"type": {"enum": names, "description": f"the registered name of the component ({kind})"}},
        "allOf": [
            *untyped,
            *({"if": {"required": ["type"], "properties": {"type": {"const": n, "pattern": f"^{re.escape(n)}$"}}},
               "then": {"$ref": f"#/$defs/editor.{prefix}{kind}.{n}"}} for n in names),
        ],
    }


def _common(argument: str, components: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The argument's schema (a pointer to it) where every component that takes it types it alike
    (a term's `weight`), else any value: in a node without `type`, only that much can be checked."""
    found = {name: c["properties"][argument] for name, c in components.items() if argument in c["properties"]}
    constraints = [{k: v for k, v in f.items() if k not in _ANNOTATIONS} for f in found.values()]
    if all(c == constraints[0] for c in constraints):
        return {"$ref": f"#/$defs/{next(iter(found))}/properties/{argument}"}
    return {}


def complete_node(kind: str, defs: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """`editor.complete.node.<kind>`: what a top-level node of a file without `extends:` must give."""
    rules = []
    for n in names:
        required = [r for r in defs[f"{kind}.{n}"].get("required", []) if r != "type"]
        if required:
            rules.append({"if": {"required": ["type"], "properties": {"type": {"const": n}}},
                          "then": {"required": required}})
    return {"required": ["type"], **({"allOf": rules} if rules else {})}


def add_editor_view(schema: dict[str, Any], sections: dict[str, tuple[str, bool]],
                    descriptions: dict[str, dict[str, str]]) -> None:
    """Add the editor's definitions to `schema` (a built spec schema) and make its root theirs.
    `sections`: the top-level node sections (`framework.spec.NODE_SECTIONS`); `descriptions`:
    `<kind>.<name>` -> argument -> its description (`framework.schema.argument_descriptions`)."""
    defs = schema["$defs"]
    kinds = {name.split(".", 1)[1]: d["properties"]["type"]["enum"] for name, d in defs.items()
             if name.startswith("node.") and name.count(".") == 1}
    editor: dict[str, Any] = {"editor.reference": REFERENCE}
    for name, definition in defs.items():
        if name.startswith(("node.", "term.")) and name.count(".") == 1:
            prefix = "term." if name.startswith("term.") else ""
            kind = name.split(".", 1)[1]
            editor[f"editor.{name}"] = partial_node(kind, definition["properties"]["type"]["enum"], defs, prefix)
        elif "x-target" in definition:
            described = descriptions.get(name.removeprefix("term."), {})
            editor[f"editor.{name}"] = _partial_component(name, definition, described)
        else:  # a pydantic section: kept as it is, references allowed
            editor[f"editor.{name}"] = editor_view(definition)
    for kind in dict.fromkeys(kind for kind, _ in sections.values()):  # in order: the file is stable
        editor[f"editor.complete.node.{kind}"] = complete_node(kind, defs, kinds[kind])
    defs.update(editor)
    schema["properties"] = editor_view({"properties": schema["properties"]})["properties"]
    complete: dict[str, Any] = {}
    for field, (kind, many) in sections.items():
        rule = {"$ref": f"#/$defs/editor.complete.node.{kind}"}
        if many:
            complete[field] = {"anyOf": [{"type": "array", "items": {"anyOf": [rule, {"$ref": "#/$defs/editor.reference"}]}},
                                         {"$ref": "#/$defs/editor.reference"}]}
        else:
            complete[field] = {"anyOf": [{"type": "object", **rule}, {"type": "null"}, {"$ref": "#/$defs/editor.reference"}]}
    # A fragment (`_base.yaml`, extended by specs and never run alone) is partial too; its
    # modeline names framework/fragment.schema.json, which refers here (yaml-language-server
    # ignores a `#/$defs/...` pointer in a modeline).
    defs["editor.fragment"] = {"type": "object", "properties": schema["properties"],
                               "additionalProperties": schema.get("additionalProperties", False)}
    required = schema.pop("required", [])
    schema["if"] = {"required": ["extends"]}
    schema["else"] = {"required": required, "properties": complete}
