"""JSON Schema of specs: the pydantic sections plus one definition per registered component.

A component's schema is generated from its constructor's typed signature: every parameter that is
not runtime-supplied (see `registry.Registry.runtime`) becomes a property, required when it has
no default. Python types map onto JSON Schema as below; a type with no JSON form (a tensor, a
module) is dropped from a union, and a parameter left with no JSON form accepts any value.

Value ranges are part of the type: `Annotated[int, Ge(1)]` (annotated_types metadata, or pydantic's
`Field(ge=1)`, whose metadata is the same) adds JSON Schema bounds (`minimum`, `exclusiveMinimum`,
`maximum`, `exclusiveMaximum`, `multipleOf`; `minItems`/`minLength` for `MinLen`), so the
committed schema carries them and `exp validate` checks them without torch (see `constrained`;
the aliases components use are in components/types.py).

`**kwargs` is followed into the base class: a class whose `__init__` takes `**kwargs` is taken to
pass them on with `super().__init__(**kwargs)`, which reaches the next class in the MRO that
defines `__init__`; that class's parameters (names, types, defaults, required) join the schema,
and if it takes `**kwargs` too the walk goes on. A parameter declared by a subclass wins over the
same name further up (a subclass may change a base default by redeclaring it and passing it on).
The node is closed (`additionalProperties: false`) when the walk ends in a class without
`**kwargs`; it stays open when the walk reaches `object` (nothing left to forward to: the keywords
are used some other way) or an `__init__` whose signature cannot be read, and for a function
target with `**kwargs`. So a subclass that fixes a base argument itself
(`super().__init__(standardize=False, **kwargs)`) must not take `**kwargs`: the schema would offer
an argument that the call then passes twice. Such a class declares what it forwards by name.
A node records under `x-inherited` which base declares each argument taken that way, so that
`exp explain` shows that base's docstring without importing anything.

`exp schema` writes the schema as committed files (a small root, `framework/spec.schema.json`, and
one fragment per family package: framework/schema_files.py; a test fails when one is stale). `exp validate` reads that file and never imports torch; `exp run` asks the live
signatures of the components it uses (`LiveSchemas`), so both apply the same rules.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import pathlib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import annotated_types

import registry

SCHEMA_PATH = pathlib.Path(__file__).with_name("spec.schema.json")
NO_JSON = object()  # marker: this annotation has no JSON Schema form


def _kind_of(meta: Any) -> str | None:
    # components.kinds.Kind, recognised by shape so that this module never imports components.
    kind = getattr(meta, "kind", None)
    return kind if type(meta).__name__ == "Kind" and isinstance(kind, str) else None


# The weight a term of a weighted mapping (components.kinds.WeightedLosses) may carry.
TERM_WEIGHT = {"type": "number", "minimum": 0, "default": 1.0,
               "description": "factor on this term in the sum, >= 0"}


def terms_schema(kind: str, name_pattern: str) -> dict[str, Any]:
    """A weighted mapping: term name -> `term.<kind>` node (a `<kind>` node plus `weight`), or
    null, which removes a term an `extends:` base defined (see framework.validate)."""
    return {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": name_pattern},
        "additionalProperties": {"anyOf": [{"$ref": f"#/$defs/term.{kind}"}, {"type": "null"}]},
    }


# annotated_types constraint -> (its attribute, the JSON Schema keyword for numbers, for sized values).
_BOUNDS: dict[type, tuple[str, str | None, str | None]] = {
    annotated_types.Ge: ("ge", "minimum", None),
    annotated_types.Gt: ("gt", "exclusiveMinimum", None),
    annotated_types.Le: ("le", "maximum", None),
    annotated_types.Lt: ("lt", "exclusiveMaximum", None),
    annotated_types.MultipleOf: ("multiple_of", "multipleOf", None),
    annotated_types.MinLen: ("min_length", None, "min"),
    annotated_types.MaxLen: ("max_length", None, "max"),
}
_SIZED = {"string": "Length", "array": "Items", "object": "Properties"}


def _constraints(metadata: Sequence[Any]) -> list[Any]:
    """The annotated_types constraints in `Annotated` metadata: given directly, grouped
    (`Interval(ge=0, lt=1)`), or inside pydantic's `Field(ge=1)`."""
    found: list[Any] = []
    for meta in metadata:
        if type(meta) in _BOUNDS:
            found.append(meta)
        elif isinstance(meta, annotated_types.GroupedMetadata) or type(meta).__name__ == "FieldInfo":
            found.extend(_constraints(list(getattr(meta, "metadata", meta))))
    return found


def constrained(schema: Any, metadata: Sequence[Any]) -> Any:
    """`schema` with the value constraints of `Annotated` metadata added as JSON Schema keywords:
    Ge/Gt/Le/Lt/MultipleOf as minimum/exclusiveMinimum/maximum/exclusiveMaximum/multipleOf on a
    number or integer; MinLen/MaxLen as minLength/minItems/minProperties (max...) on a string, list
    or mapping. In a union (`anyOf`) each member of a fitting type gets them; other members (null,
    a string such as 'auto') are left as they are. Metadata that is not a constraint is ignored."""
    bounds = _constraints(metadata)
    if not bounds or schema is NO_JSON:
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [constrained(m, metadata) for m in schema["anyOf"]]}
    schema = dict(schema)
    for bound in bounds:
        attribute, number_key, sized_key = _BOUNDS[type(bound)]
        value = getattr(bound, attribute)
        if number_key and schema.get("type") in ("number", "integer"):
            schema[number_key] = value
        elif sized_key and schema.get("type") in _SIZED:
            schema[f"{sized_key}{_SIZED[schema['type']]}"] = value
    return schema


def type_schema(annotation: Any) -> Any:
    """JSON Schema for a Python annotation, or `NO_JSON`."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in annotation.__metadata__:
            kind = _kind_of(meta)
            if kind and getattr(meta, "weighted", False):
                return terms_schema(kind, meta.TERM_NAME)
            if kind:
                return {"$ref": f"#/$defs/node.{kind}"}
        return constrained(type_schema(args[0]), annotation.__metadata__)
    if annotation is type(None) or annotation is None:
        return {"type": "null"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation in (str, pathlib.Path):
        return {"type": "string"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        members = [type_schema(a) for a in args]
        members = [m for i, m in enumerate(members) if m is not NO_JSON and m not in members[:i]]
        if not members:
            return NO_JSON
        if any(m == {} for m in members):
            return {}
        return members[0] if len(members) == 1 else {"anyOf": members}
    if origin in (list, Sequence, set, frozenset) or annotation in (list, tuple):
        item = type_schema(args[0]) if args else {}
        return {"type": "array", "items": {} if item is NO_JSON else item}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = type_schema(args[0])
            return {"type": "array", "items": {} if item is NO_JSON else item}
        items = [type_schema(a) for a in args]
        items = [{} if i is NO_JSON else i for i in items]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin in (dict, Mapping) or annotation is dict:
        value = type_schema(args[1]) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": {} if value is NO_JSON else value}
    return NO_JSON


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, tuple):
        value = list(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return NO_JSON
    return value


def _hints(target: Any) -> dict[str, Any]:
    function = target.__init__ if inspect.isclass(target) else target
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # unresolvable forward references in third-party code: use what is there
        return dict(getattr(function, "__annotations__", {}))


def _base_init(cls: type, after: type) -> tuple[type, inspect.Signature] | None:
    """Where `super(after, instance).__init__(**kwargs)` goes: the next class after `after` in
    cls's MRO that defines `__init__`, with that `__init__`'s signature less `self`; None when that
    class is `object` or its signature cannot be read (a builtin)."""
    mro = cls.__mro__
    base = next((klass for klass in mro[mro.index(after) + 1 :] if "__init__" in vars(klass)), object)
    if base is object:
        return None
    try:
        signature = inspect.signature(base.__init__)
    except (TypeError, ValueError):
        return None
    return base, signature.replace(parameters=list(signature.parameters.values())[1:])


@dataclasses.dataclass
class Constructor:
    """A component's constructor arguments, `**kwargs` followed (see the module docstring).

    parameters: name -> (parameter, its annotation); own parameters first, then each base's.
    bases: the classes the walk went into, in order, each with the arguments it adds (those no
        subclass redeclares); empty when there was no `**kwargs` to follow.
    open_ended: a `**kwargs` could not be followed, so any other keyword is accepted.
    """

    parameters: dict[str, tuple[inspect.Parameter, Any]]
    bases: dict[type, list[str]]
    open_ended: bool


def constructor(target: Any) -> Constructor:
    """The arguments a spec may give `target`, a class or a function."""
    signature, hints = inspect.signature(target), _hints(target)
    # The class whose __init__ `target(...)` runs: where the walk up the MRO starts.
    owner = next((k for k in target.__mro__ if "__init__" in vars(k)), None) if inspect.isclass(target) else None
    built = Constructor({}, {}, open_ended=False)
    added: list[str] = []  # the names this level adds
    while True:
        takes_kwargs = False
        for param in signature.parameters.values():
            if param.kind is param.VAR_KEYWORD:
                takes_kwargs = True
            # *args never carries a spec argument; a positional-only one cannot be passed by name;
            # a name already seen was redeclared by a subclass, whose declaration wins.
            elif (param.kind not in (param.VAR_POSITIONAL, param.POSITIONAL_ONLY) and param.name != "self"
                  and param.name not in built.parameters):
                built.parameters[param.name] = (param, hints.get(param.name, param.annotation))
                added.append(param.name)
        if not takes_kwargs:
            return built
        found = _base_init(target, owner) if owner is not None else None
        if found is None:
            built.open_ended = True
            return built
        owner, signature = found
        hints = _hints(owner)
        built.bases[owner] = added = []


def component_schema(kind: str, name: str) -> dict[str, Any]:
    """The JSON Schema of one registered component's node (imports the component)."""
    reg = registry.KINDS[kind]
    target = reg.load(name)
    built = constructor(target)
    properties: dict[str, Any] = {"type": {"const": name}}
    required = ["type"]
    for param_name, (param, annotation) in built.parameters.items():
        if param_name in reg.runtime:
            continue
        schema = type_schema(annotation)
        schema = {} if schema is NO_JSON else dict(schema)
        if param.default is param.empty:
            required.append(param_name)
        else:
            default = _json_default(param.default)
            if default is not NO_JSON:
                schema["default"] = default
        properties[param_name] = schema
    doc = inspect.getdoc(target) or ""
    node = {
        "type": "object",
        "title": f"{reg.noun} '{name}'",
        "description": doc.split("\n\n")[0],
        "x-target": reg.target(name),
        "properties": properties,
        "required": required,
        "additionalProperties": built.open_ended,
    }
    logged = vars(target).get("LOGGED_METRICS") if inspect.isclass(target) else None
    if logged:  # the metric keys a task logs (framework.validate checks `monitor:` against them)
        node["x-logs"] = list(logged)
    defaults = vars(target).get("DEFAULT_METRICS") if inspect.isclass(target) else None
    if defaults:  # the metrics a task reports when a spec lists none (framework.validate fills them in)
        node["x-default-metrics"] = list(defaults)
    # Where the arguments taken through **kwargs are declared (`exp explain` shows their docs).
    inherited = {f"{base.__module__}:{base.__qualname__}": [n for n in names if n in properties]
                 for base, names in built.bases.items()}
    inherited = {base: names for base, names in inherited.items() if names}
    if inherited:
        node["x-inherited"] = inherited
    return node


def argument_descriptions(kind: str, name: str) -> dict[str, str]:
    """Each argument's description from the `Args:` sections of the target's docstring, its
    `__init__`'s, and those of the bases its `**kwargs` reach (the nearest declaration wins).
    They go into the editor's view of the schema (hover), not into the definitions `exp validate`
    reads (framework.editor_schema)."""
    from framework.sources import argument_docs

    target = registry.KINDS[kind].load(name)
    bases = list(constructor(target).bases)
    owners = [target, *([target.__init__] if inspect.isclass(target) else []), *bases]
    found: dict[str, str] = {}
    for owner in owners:
        for name, text in argument_docs(inspect.getdoc(owner) or "").items():
            if text:
                found.setdefault(name, text)
    return found


def node_definition(kind: str, names: list[str], prefix: str = "") -> dict[str, Any]:
    """`node.<kind>`: a mapping whose `type` is one of the kind's names, then that name's schema
    (`<prefix><kind>.<name>`: prefix "term." for the terms of a weighted mapping)."""
    return {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": names}},
        "allOf": [
            {"if": {"required": ["type"], "properties": {"type": {"const": n}}}, "then": {"$ref": f"#/$defs/{prefix}{kind}.{n}"}}
            for n in names
        ],
    }


def term_definition(component: dict[str, Any]) -> dict[str, Any]:
    """`term.<kind>.<name>`: the component's node schema with `weight` added after `type`."""
    properties = dict(component["properties"])
    if "weight" in properties:
        raise ValueError(f"{component['x-target']} takes an argument 'weight', which a term of a "
                         "weighted sum uses for its own weight; rename the argument")
    term = dict(component, properties={"type": properties.pop("type"), "weight": TERM_WEIGHT, **properties})
    term["title"] = f"term: {component['title']}"
    return term


def _weighted_kinds(value: Any) -> set[str]:
    """The kinds whose weighted mappings (`term.<kind>` refs) occur anywhere in `value`."""
    if isinstance(value, dict):
        found = {value["$ref"].removeprefix("#/$defs/term.")} \
            if str(value.get("$ref", "")).startswith("#/$defs/term.") else set()
        return found.union(*(_weighted_kinds(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_weighted_kinds(v) for v in value))
    return set()


def _replace_placeholders(value: Any) -> Any:
    if isinstance(value, dict):
        if "x-node" in value:
            return {"$ref": f"#/$defs/node.{value['x-node']}"}
        return {k: _replace_placeholders(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_placeholders(v) for v in value]
    return value


def is_plugin(kind: str, name: str) -> bool:
    """Whether an entry comes from an installed plugin (see registry.py), not from this repository."""
    return registry.KINDS[kind].origin_of(name).startswith("plugin ")


def build_schema(plugins: bool = False) -> dict[str, Any]:
    """The whole spec schema (imports every registered component). The committed files hold this
    repository's components only (`plugins=False`), so that it does not depend on what a machine
    has installed; `exp schema --plugins -o FILE` writes one for an editor that also knows them."""
    from framework.editor_schema import add_editor_view
    from framework.spec import NODE_SECTIONS, Spec

    schema = _replace_placeholders(Spec.model_json_schema())
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "expspec spec"
    schema["properties"]["extends"] = {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        "description": "base spec(s), relative to this file; mappings merge, lists and scalars replace",
    }
    schema["properties"]["stages"] = {
        "type": "object",
        "additionalProperties": {"type": "object"},
        "description": "stage name -> spec sections merged onto the top level; one run per stage, in order",
    }
    # A staged spec writes task/data/model per stage: only these are required at the top level.
    schema["required"] = ["name", "paper"]
    defs = schema.setdefault("$defs", {})
    descriptions: dict[str, dict[str, str]] = {}
    for kind, reg in registry.KINDS.items():
        if not reg.in_specs:
            continue
        names = [n for n in reg.names() if plugins or not is_plugin(kind, n)]
        defs[f"node.{kind}"] = node_definition(kind, names)
        for name in names:
            defs[f"{kind}.{name}"] = component_schema(kind, name)
            descriptions[f"{kind}.{name}"] = argument_descriptions(kind, name)
    # Weighted mappings (`terms:` of weighted_sum) get their own term definitions, so that an
    # editor accepts `weight` inside a term and nowhere else, as `exp validate` does.
    for kind in sorted(_weighted_kinds(defs)):
        names = registry.KINDS[kind].names()
        defs[f"term.{kind}"] = node_definition(kind, names, prefix="term.")
        for name in names:
            defs[f"term.{kind}.{name}"] = term_definition(defs[f"{kind}.{name}"])
    add_editor_view(schema, NODE_SECTIONS, descriptions)
    return schema


class CommittedSchemas:
    """Component schemas read from the committed JSON file: no torch import. An installed plugin's
    components are not in that file; their schemas come from their live signatures (which imports
    the plugin's module, and whatever it imports)."""

    def __init__(self, path: pathlib.Path = SCHEMA_PATH, live_fallback: bool = False) -> None:
        """`live_fallback`: an entry missing from the file (added since `exp schema` last ran) is
        read from its live signature instead of being an error (`exp run` does this; `exp
        validate` says to run `exp schema`, since an editor reads the file)."""
        from framework.schema_files import read_defs

        self.defs: dict[str, Any] = read_defs(path)
        self._live = LiveSchemas()
        self.live_fallback = live_fallback
        self.live_used = False  # a result that read a live signature depends on code (validate_cache)

    def names(self, kind: str) -> list[str]:
        return registry.KINDS[kind].names()

    def component(self, kind: str, name: str) -> dict[str, Any]:
        key = f"{kind}.{name}"
        if key not in self.defs:
            registry.KINDS[kind].target(name)  # raises UnknownComponent with close matches
            if is_plugin(kind, name) or self.live_fallback:
                self.live_used = True
                return self._live.component(kind, name)
            raise LookupError(
                f"{registry.KINDS[kind].noun} '{name}' is registered but missing from "
                f"{SCHEMA_PATH.name}; run `exp schema` to regenerate it"
            )
        return self.defs[key]


class LiveSchemas:
    """Component schemas from the live signatures (imports each component on first use)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], dict[str, Any]] = {}

    def names(self, kind: str) -> list[str]:
        return registry.KINDS[kind].names()

    def component(self, kind: str, name: str) -> dict[str, Any]:
        if (kind, name) not in self._cache:
            registry.KINDS[kind].target(name)  # raises UnknownComponent with close matches
            self._cache[(kind, name)] = component_schema(kind, name)
        return self._cache[(kind, name)]
