"""The committed spec schema as files: a small root, `framework/spec.schema.json`, and one fragment
per registry module, `components/schema.json` (the shared building blocks) and
`components/<family>/schema.json`, so that a change to a family's components rewrites that
family's fragment only (a paper's diff holds its own fragment, not a shared 0.7 MB file).

Where a definition of the whole schema (`framework.schema.build_schema`) goes:

- a component's own definitions (`<kind>.<name>`, `term.<kind>.<name>` and their `editor.` views)
  go to the fragment of the registry module that declares the component;
- a definition that lists a kind's components (`node.<kind>`, `term.<kind>`, their editor views,
  `editor.complete.node.<kind>`) is built again in each fragment from that fragment's components,
  and the root's is their union: `anyOf` (a node is one of some fragment's components), or
  `allOf` for `editor.complete.node.<kind>` (each fragment's rules apply to its own names only);
- the rest (the spec's sections, `editor.reference`, `editor.fragment`) stays in the root.

So the root changes only when a family package is added or a family adds a kind of component.
A reference to a definition in another file is a relative file reference
(`../../framework/spec.schema.json#/$defs/node.models`), which yaml-language-server follows.
`read_defs` reads the files back for `exp validate` (no torch): every definition, each
component's with its references made local again, so that they read as in one file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import registry

ROOT_DIR = Path(__file__).resolve().parents[1]
ROOT_FILE = ROOT_DIR / "framework" / "spec.schema.json"
FRAGMENT_NAME = "schema.json"
# Definitions that list a kind's components, by prefix; the root joins the fragments' with the operator.
LISTING = {"node.": "anyOf", "term.": "anyOf", "editor.node.": "anyOf", "editor.term.": "anyOf",
           "editor.complete.node.": "allOf"}


def fragment_file(origin: str) -> Path:
    """The fragment of a registry module: 'components' -> components/schema.json,
    'components.<family>' -> components/<family>/schema.json."""
    return ROOT_DIR.joinpath(*origin.split("."), FRAGMENT_NAME)


def fragment_files() -> list[Path]:
    """Every fragment of this repository's registry modules (`exp validate` reads them all)."""
    origins = {reg.origin_of(name) for reg in registry.KINDS.values() for name in reg.names()}
    return sorted(fragment_file(o) for o in origins if not o.startswith("plugin "))


def _component_origin(defname: str) -> str | None:
    """The registry module declaring the component a definition belongs to, or None (not a component's)."""
    kind, _, name = defname.removeprefix("editor.").removeprefix("term.").partition(".")
    reg = registry.KINDS.get(kind)
    return reg.origin_of(name) if reg is not None and name in reg.names() else None


def _listing(defname: str) -> tuple[str, str] | None:
    """(prefix, kind) of a definition that lists a kind's components, else None."""
    for prefix in sorted(LISTING, key=len, reverse=True):
        kind = defname.removeprefix(prefix)
        if defname.startswith(prefix) and "." not in kind and kind in registry.KINDS:
            return prefix, kind
    return None


def _listing_for(prefix: str, kind: str, names: list[str], defs: dict[str, Any]) -> dict[str, Any]:
    """A listing definition built from `names` only (one fragment's components of `kind`)."""
    from framework.editor_schema import complete_node, partial_node
    from framework.schema import node_definition

    if prefix == "editor.complete.node.":
        return complete_node(kind, defs, names)
    if prefix.startswith("editor."):
        return partial_node(kind, names, defs, "term." if prefix == "editor.term." else "")
    return node_definition(kind, names, prefix="term." if prefix == "term." else "")


def _relative(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start.parent)).as_posix()


def _point_outside(value: Any, local: set[str], other: str) -> Any:
    """`value` with each `#/$defs/X` reference pointing into file `other` where X is not in `local`
    or lists a kind's components (a fragment's own listing is the root's to join, never a target)."""
    if isinstance(value, dict):
        out = {k: _point_outside(v, local, other) for k, v in value.items()}
        ref = value.get("$ref")
        target = ref[8:].split("/", 1)[0] if isinstance(ref, str) and ref.startswith("#/$defs/") else None
        if target is not None and (target not in local or _listing(target) is not None):
            out["$ref"] = other + ref
        return out
    if isinstance(value, list):
        return [_point_outside(v, local, other) for v in value]
    return value


def split(whole: dict[str, Any]) -> dict[Path, dict[str, Any]]:
    """The files of the whole schema: path -> content (root first, then fragments by path)."""
    defs = whole["$defs"]
    fragments: dict[str, dict[str, Any]] = {}
    root_defs: dict[str, Any] = {}
    for defname, definition in defs.items():
        origin = _component_origin(defname)
        if origin is not None:
            fragments.setdefault(origin, {})[defname] = definition
        elif _listing(defname) is None:
            root_defs[defname] = definition
    for defname in defs:  # the listings, in the whole schema's order
        if (listing := _listing(defname)) is None:
            continue
        prefix, kind = listing
        by_origin: dict[str, list[str]] = {}
        listed = f"term.{kind}" if prefix in ("term.", "editor.term.") else f"node.{kind}"
        for name in defs[listed]["properties"]["type"]["enum"]:
            by_origin.setdefault(registry.KINDS[kind].origin_of(name), []).append(name)
        parts = []
        for origin, names in sorted(by_origin.items()):
            fragments.setdefault(origin, {})[defname] = _listing_for(prefix, kind, names, defs)
            parts.append({"$ref": f"{_relative(fragment_file(origin), ROOT_FILE)}#/$defs/{defname}"})
        root_defs[defname] = {LISTING[prefix]: parts}
    files: dict[Path, dict[str, Any]] = {ROOT_FILE: {**whole, "$defs": root_defs}}
    for origin in sorted(fragments):
        path = fragment_file(origin)
        own = fragments[origin]
        files[path] = {
            "$schema": whole["$schema"],
            "title": f"expspec spec: the components of {origin.replace('.', '/')}/registry.py",
            "description": "A fragment of framework/spec.schema.json, written by `exp schema` "
                           "(framework/schema_files.py); not a spec's schema on its own.",
            "$defs": _point_outside(own, set(own), _relative(ROOT_FILE, path)),
        }
    return dict(sorted(files.items(), key=lambda item: (item[0] != ROOT_FILE, str(item[0]))))


def dump(content: dict[str, Any]) -> str:
    return json.dumps(content, indent=1) + "\n"


def stale(whole: dict[str, Any]) -> list[Path]:
    """The files of `whole` whose committed text differs (or that are missing), and committed
    fragments that `whole` no longer has."""
    files = split(whole)
    differ = [p for p, content in files.items() if not p.is_file() or p.read_text() != dump(content)]
    orphans = [p for p in sorted(ROOT_DIR.glob(f"components/**/{FRAGMENT_NAME}")) if p not in files]
    return differ + orphans


def write(whole: dict[str, Any]) -> list[Path]:
    """Write the files of `whole` and remove fragments it no longer has; returns the files written."""
    files = split(whole)
    for path in sorted(ROOT_DIR.glob(f"components/**/{FRAGMENT_NAME}")):
        if path not in files:
            path.unlink()
    for path, content in files.items():
        path.write_text(dump(content))
    return list(files)


def read_defs(root: Path = ROOT_FILE) -> dict[str, Any]:
    """Every definition of the committed files, references local again: the root's (its listings
    as their `anyOf`/`allOf` of fragments) and each fragment's own components."""
    if not root.is_file():
        raise FileNotFoundError(f"{root} is missing; run `exp schema` to write it")
    defs: dict[str, Any] = {}
    for path in fragment_files():
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; run `exp schema` to write it")
        text = path.read_text().replace(f'"{_relative(root, path)}#/', '"#/')
        defs.update((k, v) for k, v in json.loads(text)["$defs"].items() if _listing(k) is None)
    defs.update(json.loads(root.read_text())["$defs"])
    return defs
