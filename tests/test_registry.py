"""registry.py: the contract every entry keeps, lookups, duplicates."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import registry
from framework.schema import component_schema

ENTRIES = [(table, name) for table, reg in registry.KINDS.items() for name in reg.names()]


@pytest.mark.parametrize("table, name", ENTRIES, ids=[f"{t}.{n}" for t, n in ENTRIES])
def test_entry_contract(table: str, name: str) -> None:
    """Every entry imports, has a docstring, takes its runtime arguments, and every spec argument
    has a JSON form (else a spec could not set it) and a snake_case name."""
    reg = registry.KINDS[table]
    target = reg.load(name)
    assert callable(target)
    assert inspect.getdoc(target), f"{table}.{name} has no docstring"
    params = inspect.signature(target).parameters
    if table != "tasks":  # a task takes the subset of the runtime sections it uses
        for runtime in reg.runtime:
            assert runtime in params, f"{table}.{name} does not take runtime argument '{runtime}'"
    schema = component_schema(table, name)
    assert name == name.lower() and " " not in name
    for key in schema["required"]:
        assert key == "type" or schema["properties"][key] != {}, f"{table}.{name}.{key} has no JSON type"


def test_no_duplicate_names_in_registry_source() -> None:
    """A dict literal silently keeps the last of two equal keys; check the source instead."""
    tree = ast.parse(Path(registry.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            assert len(keys) == len(set(keys)), f"duplicate registry names at line {node.lineno}"


def test_duplicate_registration_is_an_error() -> None:
    reg = registry.Registry("loss", {"a": "m:A"})
    with pytest.raises(ValueError, match="loss 'a' is already registered as m:A; refusing to re-register it as m:B"):
        reg.add("a", "m:B")


@pytest.mark.parametrize(
    "name, message",
    [
        ("adamw_", "unknown optimizer 'adamw_'. Did you mean 'adamw'?"),
        ("zzz", "unknown optimizer 'zzz'. Known optimizers: adam, adamw, sgd."),
    ],
)
def test_unknown_name(name: str, message: str) -> None:
    with pytest.raises(registry.UnknownComponent) as info:
        registry.OPTIMIZERS.load(name)
    assert str(info.value) == message


def test_bad_target_format() -> None:
    with pytest.raises(ValueError, match="target must be 'module:attr', got 'module.attr'"):
        registry.Registry("model", {"x": "module.attr"})
