"""registry.py: the contract every entry keeps, lookups, duplicates, family and plugin declarations."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import registry
from framework.schema import component_schema

ENTRIES = [(kind, name) for kind, reg in registry.KINDS.items() for name in reg.names()]


@pytest.mark.parametrize("kind, name", ENTRIES, ids=[f"{t}.{n}" for t, n in ENTRIES])
def test_entry_contract(kind: str, name: str) -> None:
    """Every entry imports, has a docstring, takes its runtime arguments, and every spec argument
    has a JSON form (else a spec could not set it) and a snake_case name."""
    reg = registry.KINDS[kind]
    target = reg.load(name)
    assert callable(target)
    assert inspect.getdoc(target), f"{kind}.{name} has no docstring"
    params = inspect.signature(target).parameters
    if kind != "tasks":  # a task takes the subset of the runtime sections it uses
        for runtime in reg.runtime:
            assert runtime in params, f"{kind}.{name} does not take runtime argument '{runtime}'"
    schema = component_schema(kind, name)
    assert name == name.lower() and " " not in name
    for key in schema["required"]:
        assert key == "type" or schema["properties"][key] != {}, f"{kind}.{name}.{key} has no JSON type"


ROOT = Path(registry.__file__).parent
DECLARATIONS = [ROOT / "registry.py", ROOT / "components" / "registry.py", *sorted((ROOT / "components").glob("*/registry.py"))]


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_duplicate_names_in_declaration_source(path: Path) -> None:
    """A dict literal silently keeps the last of two equal keys; check the source instead."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            assert len(keys) == len(set(keys)), f"duplicate registry names at {path.name}:{node.lineno}"


@pytest.mark.parametrize("path", DECLARATIONS[1:], ids=lambda p: str(p.relative_to(ROOT)))
def test_declarations_are_data(path: Path) -> None:
    """A family's registry module holds literals only: no imports, no code (it is read by
    `exp validate`, which must stay fast and never import torch)."""
    for node in ast.parse(path.read_text()).body:
        assert isinstance(node, (ast.Assign, ast.Expr)), f"{path.name}:{node.lineno}: only assignments of literals"
        if isinstance(node, ast.Assign):
            ast.literal_eval(node.value)


def test_every_family_package_is_merged() -> None:
    origins = {reg.origin_of(n) for reg in registry.KINDS.values() for n in reg.names()}
    families = {f"components.{p.parent.name}" for p in DECLARATIONS[2:]}
    assert families | {"components"} == origins
    assert registry.KINDS["losses"].origin_of("cvm_dependence") == "components.fairness"
    assert registry.KINDS["samplers"].origin == "components.diffusion"


def test_duplicate_registration_is_an_error_naming_both_places() -> None:
    reg = registry.Registry("loss", entries={"a": "m:A"}, origin="components.fairness")
    with pytest.raises(ValueError) as error:
        reg.add("a", "lab.losses:A", "plugin lab-losses (lab.expspec)")
    assert str(error.value) == (
        "loss 'a' is declared twice: m:A in components.fairness, and lab.losses:A in "
        "plugin lab-losses (lab.expspec); rename one of them")


def test_entries_of_an_unknown_kind_are_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "KINDS", dict(registry.KINDS))
    with pytest.raises(ValueError) as error:
        registry._add_entries("components.x", {"lossess": {"y": "m:Y"}})
    assert str(error.value) == "components.x declares entries of unknown kind 'lossess'. Did you mean 'losses'?"
    with pytest.raises(ValueError, match="^kind 'losses' is declared twice: in registry.py and in components.x$"):
        registry._declare_kinds("components.x", {"losses": {"noun": "loss"}})


@pytest.mark.parametrize(
    "name, message",
    [
        ("adamw_", "unknown optimizer 'adamw_'. Did you mean 'adamw'?"),
        ("zzz", "unknown optimizer 'zzz'. Known optimizers: adam, adamw, landing_adam, sgd."),
    ],
)
def test_unknown_name(name: str, message: str) -> None:
    with pytest.raises(registry.UnknownComponent) as info:
        registry.KINDS["optimizers"].load(name)
    assert str(info.value) == message


def test_bad_target_format() -> None:
    with pytest.raises(ValueError, match="target must be 'module:attr', got 'module.attr'"):
        registry.Registry("model", entries={"x": "module.attr"})


@pytest.mark.parametrize("args", [["validate", "-q", "specs"], ["list"], ["list", "samplers"],
                                  ["explain", "cvm_dependence"], ["explain", "adamw"], ["explain", "slope"]],
                         ids=" ".join)
def test_catalog_commands_import_no_torch(args: list[str]) -> None:
    """Reading the registry (every family and plugin declaration) imports no component."""
    code = (
        "import sys\nfrom framework.cli import main\n"
        f"rc = main({args!r})\n"
        "heavy = sorted(m for m in ('torch', 'lightning', 'mlflow', 'torchmetrics', 'numpy') if m in sys.modules)\n"
        "print('heavy:', heavy)\nsys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "heavy: []"


def test_a_swapped_pair_of_letters_is_the_first_hint() -> None:
    from registry import close_matches

    assert close_matches("mpl", ["mup", "mlp"]) == ["mlp"]
    assert close_matches("mpl", ["mlp", "mup"]) == ["mlp"]
    assert close_matches("adamm", ["adam", "adamw"]) == ["adam"]  # otherwise difflib's order
