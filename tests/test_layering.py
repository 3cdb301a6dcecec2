"""The layering docs/layout.md states, checked on the imports of every module (read with ast, so
lazy imports inside functions count too):

- a family package (components/<family>/ with a registry.py) imports no other family's modules,
  and the shared building blocks (the rest of components/) import no family's: a piece two
  families use moves to the shared part;
- a component imports from framework/ only its two leaf modules meant for components:
  framework.extras (an optional package and the message naming its extra) and
  framework.claims.evidence (the values of the claims language, for claim functions)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ROOT / "components"
FAMILIES = sorted(p.parent.name for p in COMPONENTS.glob("*/registry.py"))
FOR_COMPONENTS = {"framework.extras", "framework.claims.evidence"}


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def _package(path: Path) -> str | None:
    """The family a module of components/ belongs to, or None for the shared part."""
    first = path.relative_to(COMPONENTS).parts[0]
    return first if first in FAMILIES else None


def test_families_and_shared_blocks_import_no_other_family() -> None:
    assert len(FAMILIES) >= 20 and "sequence" not in FAMILIES and "generative" not in FAMILIES
    wrong = []
    for path in sorted(COMPONENTS.rglob("*.py")):
        own = _package(path)
        for line, module in imports(path):
            parts = module.split(".")
            if parts[0] == "components" and len(parts) > 1 and parts[1] in FAMILIES and parts[1] != own:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: imports {module} "
                             f"({'family ' + own if own else 'a shared block'} -> family {parts[1]})")
    assert wrong == []


def test_components_import_only_the_framework_modules_meant_for_them() -> None:
    wrong = [f"{path.relative_to(ROOT)}:{line}: imports {module}"
             for path in sorted(COMPONENTS.rglob("*.py")) for line, module in imports(path)
             if module.split(".")[0] == "framework" and module not in FOR_COMPONENTS]
    assert wrong == []
