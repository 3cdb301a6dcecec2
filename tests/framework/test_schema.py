"""framework/schema.py: annotations -> JSON Schema; the committed schema is current."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest

import registry
from components.kinds import Loss, WeightedLosses
from framework import schema_files
from framework.schema import (
    NO_JSON,
    LiveSchemas,
    build_schema,
    component_schema,
    constructor,
    term_definition,
    type_schema,
)

ROOT = Path(__file__).resolve().parents[2]


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
        (WeightedLosses, {"type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z][a-z0-9_]*$"},
                          "additionalProperties": {"anyOf": [{"$ref": "#/$defs/term.losses"}, {"type": "null"}]}}),
        (Any, {}),
        (object, NO_JSON),
        (float | object, {"type": "number"}),
    ],
    ids=lambda v: "no-json" if v is NO_JSON else str(v)[:30],
)
def test_type_schema(annotation: Any, schema: Any) -> None:
    assert type_schema(annotation) == schema


def test_committed_schema_is_current() -> None:
    """Fails when a component or section changed without `exp schema` (then commit the files)."""
    assert schema_files.stale(build_schema()) == [], "stale: run `exp schema` and commit the files"


def test_a_component_change_rewrites_its_family_fragment_only() -> None:
    """The committed schema is a root plus one fragment per family package: a changed or added
    component of one family changes that family's fragment, nothing else (a paper's diff)."""
    whole = build_schema()
    before = schema_files.split(whole)
    changed = copy.deepcopy(whole)
    changed["$defs"]["models.tiny_token_unet"]["properties"]["extra"] = {"type": "integer"}
    after = schema_files.split(changed)
    assert [p for p in before if before[p] != after[p]] == [ROOT / "components/diffusion/schema.json"]
    assert schema_files.ROOT_FILE in before and len(before) == len(schema_files.fragment_files()) + 1
    assert len(schema_files.dump(before[schema_files.ROOT_FILE])) < 100_000  # small: no component in it


def test_every_reference_of_the_committed_files_resolves() -> None:
    """Each `$ref` of the root and the fragments names a definition that exists, in its own file
    or in the file it points to; a component never points at its own fragment's listing (which
    lists that family's components only) but at the root's."""
    files = {path: json.loads(path.read_text()) for path in [schema_files.ROOT_FILE, *schema_files.fragment_files()]}

    def refs(value: Any) -> list[str]:
        if isinstance(value, dict):
            return ([value["$ref"]] if isinstance(value.get("$ref"), str) else []) + [r for v in value.values() for r in refs(v)]
        return [r for v in value for r in refs(v)] if isinstance(value, list) else []

    checked = 0
    for path, content in files.items():
        for ref in refs(content):
            where, _, pointer = ref.partition("#")
            target = (path.parent / where).resolve() if where else path
            node = files[target]
            for part in pointer.strip("/").split("/"):
                node = node[part]
            name = pointer.split("/")[2]
            listing = name.startswith(("node.", "editor.node.", "editor.complete.")) or \
                name.count(".") == 1 + name.startswith("editor.") and name.removeprefix("editor.").startswith("term.")
            if path != schema_files.ROOT_FILE and target == path:
                assert not listing, f"{path}: {ref} lists this family's components only"
            checked += 1
    assert checked > 1000


# -- **kwargs followed into the base class (toy components, registered in a throwaway kind) -----


class Base:
    def __init__(self, width: int, depth: int = 2, scale: float = 1.0) -> None:
        self.width, self.depth, self.scale = width, depth, scale


class Child(Base):
    def __init__(self, name: str = "c", depth: int = 5, **kwargs: Any) -> None:
        super().__init__(depth=depth, **kwargs)
        self.name = name


class GrandChild(Child):
    def __init__(self, flag: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.flag = flag


class NoBase:
    """Its **kwargs go to `object`: nothing to follow."""

    def __init__(self, a: int = 1, **kwargs: Any) -> None:
        self.a, self.extra = a, kwargs


class OnNoBase(NoBase):
    def __init__(self, b: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)


class NewOnly:
    """No __init__ of its own: its signature is __new__'s, whose **kwargs cannot be followed."""

    def __new__(cls, a: int = 1, **kwargs: Any) -> "NewOnly":
        return super().__new__(cls)


def open_function(a: int = 1, **kwargs: Any) -> dict:
    return {"a": a, **kwargs}


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["Base", "Child", "GrandChild", "NoBase", "OnNoBase", "NewOnly", "open_function"]
    kind = registry.Registry("toy", entries={n.lower(): f"{__name__}:{n}" for n in names})
    monkeypatch.setitem(registry.KINDS, "toys", kind)


def _arguments(schema: dict) -> dict:
    """argument -> default (or 'required'), in schema order."""
    props = {k: v for k, v in schema["properties"].items() if k != "type"}
    return {k: "required" if k in schema["required"] else v.get("default") for k, v in props.items()}


@pytest.mark.parametrize(
    "name, arguments, closed",
    [
        ("base", {"width": "required", "depth": 2, "scale": 1.0}, True),
        # own first; the redeclared `depth` keeps the subclass default; `width` stays required
        ("child", {"name": "c", "depth": 5, "width": "required", "scale": 1.0}, True),
        ("grandchild", {"flag": False, "name": "c", "depth": 5, "width": "required", "scale": 1.0}, True),
        ("nobase", {"a": 1}, False),
        ("onnobase", {"b": 2, "a": 1}, False),
        ("newonly", {"a": 1}, False),
        ("open_function", {"a": 1}, False),
    ],
)
def test_kwargs_are_followed_into_the_base(toys: None, name: str, arguments: dict, closed: bool) -> None:
    schema = component_schema("toys", name)
    assert _arguments(schema) == arguments
    assert schema["additionalProperties"] is (not closed)


def test_constructor_names_the_bases_it_followed() -> None:
    assert constructor(GrandChild).bases == {Child: ["name", "depth"], Base: ["width", "scale"]}
    assert constructor(Base).bases == {}
    assert constructor(OnNoBase).bases == {NoBase: ["a"]} and constructor(OnNoBase).open_ended


def test_followed_schema_rejects_unknown_and_checks_base_types(toys: None) -> None:
    validator = jsonschema.Draft202012Validator(component_schema("toys", "child"))
    assert validator.is_valid({"type": "child", "width": 3, "scale": 0.5})
    assert not validator.is_valid({"type": "child", "width": 3, "scael": 0.5})  # unknown key
    assert not validator.is_valid({"type": "child", "scale": 0.5})  # base's required width missing
    assert not validator.is_valid({"type": "child", "width": "3"})  # base's type
    # an open chain keeps accepting what it cannot check
    assert jsonschema.Draft202012Validator(component_schema("toys", "onnobase")).is_valid(
        {"type": "onnobase", "anything": 1}
    )


def test_live_schemas_follow_kwargs(toys: None) -> None:
    assert LiveSchemas().component("toys", "grandchild") == component_schema("toys", "grandchild")
    assert "width" in LiveSchemas().component("toys", "grandchild")["required"]


def test_schema_says_where_inherited_arguments_are_declared(toys: None) -> None:
    """`x-inherited` (read by `exp explain`): each base the walk went into, with the arguments it
    adds; a base that adds none (or no walk at all) is left out."""
    assert component_schema("toys", "grandchild")["x-inherited"] == {
        f"{__name__}:Child": ["name", "depth"], f"{__name__}:Base": ["width", "scale"]}
    assert "x-inherited" not in component_schema("toys", "base")
    assert component_schema("toys", "onnobase")["x-inherited"] == {f"{__name__}:NoBase": ["a"]}


BASE_DATA_DEFAULTS = {"batch_size": 64, "val_fraction": 0.15, "test_fraction": 0.15, "split_seed": 0,
                      "standardize": True, "num_workers": 0, "standardize_target": False}


@pytest.mark.parametrize(
    "name, changed",
    [
        ("synthetic_classification", {}),
        ("synthetic_regression", {}),
        ("sklearn_dataset", {}),
        ("csv_table", {}),
        ("synthetic_fair_tabular", {"batch_size": 256}),
        ("uci_adult", {"batch_size": 256, "val_fraction": 0.1, "test_fraction": 0.0}),
    ],
)
def test_data_modules_take_the_base_arguments(name: str, changed: dict) -> None:
    """Each declares only its own arguments (and the base defaults it changes) plus **kwargs."""
    schema = LiveSchemas().component("data", name)
    arguments = _arguments(schema)
    assert {k: arguments[k] for k in BASE_DATA_DEFAULTS} == {**BASE_DATA_DEFAULTS, **changed}
    assert schema["additionalProperties"] is False
    assert schema["x-inherited"] == {
        "components.data.base:ArrayDataModule": [k for k in BASE_DATA_DEFAULTS if k not in changed]}


SPEC = {"name": "s", "paper": "demo", "task": {"type": "classification"}}


@pytest.mark.parametrize(
    "loss, valid",
    [
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "weight": 2.0}}}, True),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy"}, "cvm": None}}, True),
        ({"type": "weighted_sum", "terms": {"fair": {"type": "weighted_sum", "weight": 0.5,
                                                    "terms": {"cvm": {"type": "cvm_dependence", "weight": 3.0}}}}}, True),
        ({"type": "cross_entropy", "weight": 2.0}, False),
        ({"type": "weighted_sum", "weight": 2.0, "terms": {"ce": {"type": "cross_entropy"}}}, False),
        ({"type": "weighted_sum", "terms": [{"type": "cross_entropy"}]}, False),
        ({"type": "weighted_sum", "terms": {}}, False),
        ({"type": "weighted_sum", "terms": {"1": {"type": "cross_entropy"}}}, False),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "weight": -1.0}}}, False),
        ({"type": "weighted_sum", "terms": {"ce": {"type": "cross_entropy", "wieght": 1.0}}}, False),
    ],
    ids=["term weight", "null term", "nested sum", "lone loss weight", "weight on the sum", "terms as a list",
         "no terms", "numbered term", "negative weight", "misspelled weight"],
)
def test_committed_schema_puts_weight_in_terms_only(loss: dict, valid: bool) -> None:
    """Editors read the committed schema: it accepts `weight` inside a term and nowhere else."""
    from referencing import Registry, Resource

    files = [schema_files.ROOT_FILE, *schema_files.fragment_files()]
    store = Registry().with_resources((path.as_uri(), Resource.from_contents(json.loads(path.read_text())))
                                      for path in files)
    root = {**json.loads(schema_files.ROOT_FILE.read_text()), "$id": schema_files.ROOT_FILE.as_uri()}
    validator = jsonschema.Draft202012Validator(root, registry=store)
    assert validator.is_valid({**SPEC, "loss": loss}) == valid


def test_a_loss_argument_named_weight_cannot_be_a_term() -> None:
    component = {"title": "loss 'x'", "x-target": "m:X", "properties": {"type": {"const": "x"}, "weight": {}}}
    with pytest.raises(ValueError) as info:
        term_definition(component)
    assert str(info.value) == ("m:X takes an argument 'weight', which a term of a weighted sum uses for its own "
                               "weight; rename the argument")
