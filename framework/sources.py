"""Where a registered target is defined, read from its source without importing it.

`exp explain` shows a component's file:line and docstring; importing the component would import
torch (seconds), so the module file is found with `importlib.util.find_spec` on the top-level
package and the package's search path (no module is executed), and the definition is found by
parsing the file. A name a module re-exports (``from .sgd import SGD`` in torch/optim/__init__.py)
is followed into the module it comes from.
"""

from __future__ import annotations

import ast
import re
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    file: str
    line: int
    doc: str


def module_file(module: str) -> Path | None:
    """The .py file of a dotted module name, found without executing any module."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin)
    for part in rest:
        folder = path.parent / part
        path = folder / "__init__.py" if (folder / "__init__.py").is_file() else path.parent / f"{part}.py"
    return path if path.is_file() else None


def _relative(module: str, level: int, name: str | None, is_package: bool) -> str:
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, name] if name else base)


def locate(target: str, _depth: int = 0) -> Source | None:
    """file:line and docstring of "module:attr" (a class or function), or None if not found."""
    module, _, attr = target.partition(":")
    path = module_file(module)
    if path is None or _depth > 3:
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    head, _, rest = attr.partition(".")
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == head:
            if rest:  # a nested attribute (Class.method)
                for child in node.body:
                    if isinstance(child, (ast.ClassDef, ast.FunctionDef)) and child.name == rest:
                        node = child
            return Source(str(path), node.lineno, ast.get_docstring(node) or "")
    for node in tree.body:  # re-exported: follow `from x import attr`
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == head for a in node.names):
            original = next(a.name for a in node.names if (a.asname or a.name) == head)
            source = _relative(module, node.level, node.module, path.name == "__init__.py") if node.level else node.module
            if source:
                return locate(f"{source}:{original}{'.' + rest if rest else ''}", _depth + 1)
    return None


_ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:", "Keyword Args:", "Keyword Arguments:")
_ARG_ITEM = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")


def summary(doc: str) -> str:
    """The first paragraph of a docstring, as one line."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


def without_arguments(doc: str) -> str:
    """A docstring less its `Args:` sections (shown per argument instead)."""
    lines, kept, skipping, outer = doc.expandtabs().splitlines(), [], False, 0
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if skipping and line.strip() and indent <= outer:
            skipping = False
        if not skipping and line.strip() in _ARGS_HEADERS:
            skipping, outer = True, indent
        if not skipping:
            kept.append(line)
    return "\n".join(kept).strip()


def argument_docs(doc: str) -> dict[str, str]:
    """argument name -> its description, from the Google-style `Args:` section of a docstring
    (`Arguments:`, `Parameters:` and `Keyword Args:` too; `name (type): text` as torch writes it).
    Each description is the item's first paragraph as one line; what follows a blank line inside
    an item (a `.. note::` block) is left out."""
    found: dict[str, str] = {}
    lines = doc.expandtabs().splitlines()
    i = 0
    while i < len(lines):
        header = lines[i]
        i += 1
        if header.strip() not in _ARGS_HEADERS:
            continue
        outer = len(header) - len(header.lstrip())
        item_indent, name, paragraph_ended = None, None, False
        while i < len(lines):
            line = lines[i]
            indent = len(line) - len(line.lstrip())
            if line.strip() and indent <= outer:
                break  # the section ended
            i += 1
            if not line.strip():
                paragraph_ended = name is not None
                continue
            item_indent = indent if item_indent is None else item_indent
            match = _ARG_ITEM.match(line.strip()) if indent == item_indent else None
            if match:
                name, paragraph_ended = match.group(1), False
                found[name] = (match.group(2) or "").strip()
            elif name is not None and not paragraph_ended:
                found[name] = f"{found[name]} {line.strip()}".strip()
    return found
