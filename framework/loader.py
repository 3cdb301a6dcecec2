"""Loading a spec: safe YAML with line/column marks, `extends:`, `key=value` overrides, `${a.b}`.

Rules, in the order they apply:

1. YAML is read with a safe loader: no tags beyond YAML's own, no merge keys (`<<`; use
   `extends:`), no duplicate keys. `1e-3` reads as a float (YAML 1.1 would read a string).
2. `extends: base.yaml` (or a list of files, merged left to right) names files relative to the
   spec. The spec is merged onto its bases: mappings merge key by key, recursively; lists and
   scalars replace; a component node whose `type` changes is replaced whole (the base's
   arguments belong to another component). A cycle is an error. Named terms (`loss.terms`) are a
   mapping, so they merge by name: a child changes `cvm: {weight: 5.0}` and keeps the rest, adds
   a term by a new name, and removes one by setting it to null (`cvm: null`; the null is kept
   here and the term dropped by `framework.validate`), or replaces the whole `loss` with a node of
   another type.
3. Overrides `key.path=value` apply in order. The value is parsed as YAML (`lr=3e-3` is a number,
   `hidden=[32,32]` a list, `model={type: mlp}` a mapping) and replaces what is at the path; a list
   item is addressed by its index (`metrics.1.type=auroc`), a named term by its name
   (`loss.terms.cvm.weight=3`). Missing mappings on the path are made. The path is spelled as
   error messages, sweep axes and MLflow params spell it (`framework.errors.format_path`).
4. `${a.b}` references are resolved last, against the merged and overridden spec: a value that is
   exactly one reference takes the referenced value with its type; a reference inside a longer
   string is formatted into it. References may chain; a cycle is an error.

Every value keeps the mark of where it was written (file:line:col or the override), so that
validation errors can point at it.

The pieces: `framework.file_text` reads a spec file's text, `framework.marked_yaml` parses it
into data with marks (within the limits stated there), and `framework.references` resolves
`${...}`. `extends:` reads at most `MAX_EXTENDS` files for one spec (the spec included).
"""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

from framework.errors import Mark, Path, Problem, SpecError, format_path, key_parts, list_index
from framework.file_text import display_name, file_identity, read_text, unreadable
from framework.marked_yaml import Loaded, copy_tree, parse_once
from framework.references import resolve_references


def _subpaths(value: Any, path: Path) -> Any:
    """The key paths strictly under `path` of the loaded `value` found there (its marks' keys)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        sub = (*path, key)
        yield sub
        yield from _subpaths(item, sub)


def _drop_marks(loaded: Loaded, prefix: Path, value: Any) -> None:
    """Forget the marks under `prefix`, where `loaded` held `value` (walked, not every mark scanned)."""
    for path in _subpaths(value, prefix):
        loaded.key_marks.pop(path, None)
        loaded.value_marks.pop(path, None)


def _merge(base: Loaded, child: Loaded, data_base: Any, data_child: Any, path: Path) -> Any:
    """Merge child onto base at `path`: mappings recursively, anything else replaced."""
    same_component = data_base.get("type", data_child.get("type")) == data_child.get("type", data_base.get("type")) \
        if isinstance(data_base, dict) and isinstance(data_child, dict) else False
    if isinstance(data_base, dict) and isinstance(data_child, dict) and same_component:
        merged = dict(data_base)
        for key, value in data_child.items():
            sub = (*path, key)
            if key in merged:
                merged[key] = _merge(base, child, merged[key], value, sub)
            else:
                merged[key] = value
                _copy_marks(base, child, sub, value)
            for marks, child_marks in ((base.key_marks, child.key_marks), (base.value_marks, child.value_marks)):
                if sub in child_marks:
                    marks[sub] = child_marks[sub]
        return merged
    _drop_marks(base, path, data_base)
    _copy_marks(base, child, path, data_child)
    return data_child


def _copy_marks(base: Loaded, child: Loaded, path: Path, value: Any) -> None:
    """Every mark of the child at or under `path`, where it holds `value`, replaces the base's."""
    for p in (path, *_subpaths(value, path)):
        for marks, child_marks in ((base.key_marks, child.key_marks), (base.value_marks, child.value_marks)):
            if p in child_marks:
                marks[p] = child_marks[p]


SPEC_SHAPE = "a spec is a mapping of sections with at least 'name', 'paper' and 'task'"
# Files read for one spec through `extends:`, the spec included: a chain or a fan-out of bases
# (`extends: [b, b, b]` in every base) cannot make reading take exponential time.
MAX_EXTENDS = 64


def load_file(path: str | FsPath, shape: str = SPEC_SHAPE) -> Loaded:
    """Read a spec file and merge its `extends:` chain (see the module docstring). The file holds
    one mapping (`shape` says of what, in the message of an empty file or another value)."""
    return _load(FsPath(path), (), [0], shape)


def _load(path: FsPath, stack: tuple[tuple[Any, str], ...], reads: list[int], shape: str) -> Loaded:
    """`stack`: (identity, display name) of the files whose `extends` led here; `reads`: how
    many files this spec has read so far (MAX_EXTENDS)."""
    reads[0] += 1
    source = display_name(path)
    return _merge_bases(path, parse_once(read_text(path, source), source), stack, reads, shape)


def _merge_bases(path: FsPath, loaded: Loaded, stack: tuple[tuple[Any, str], ...], reads: list[int],
                 shape: str) -> Loaded:
    if loaded.data is None:
        raise SpecError([Problem(Mark(loaded.source), (), f"file is empty (or only whitespace and comments): {shape}")])
    if not isinstance(loaded.data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), f"expected a mapping at the top level, got a "
                                                            f"{type(loaded.data).__name__}: {shape}")])
    stack = (*stack, (file_identity(path), loaded.source))
    extends = loaded.data.pop("extends", None)
    if extends is None:
        return loaded
    bases = [extends] if isinstance(extends, str) else extends
    mark = loaded.value_mark(("extends",))
    if not isinstance(bases, list) or not bases or not all(isinstance(b, str) and b for b in bases):
        raise SpecError([Problem(mark, ("extends",), "expected a file name or a non-empty list of file names, "
                                                     f"got {extends!r}")])
    merged: Loaded | None = None
    for base_name in bases:
        base_path = path.parent / base_name
        if file_identity(base_path) in (identity for identity, _ in stack):
            chain = " -> ".join([*(name for _, name in stack), display_name(base_path)])
            raise SpecError([Problem(mark, ("extends",), f"extends cycle: {chain}")])
        reason = unreadable(base_path)
        if reason:
            raise SpecError([Problem(mark, ("extends",), f"base spec '{base_name}' not found (looked for {display_name(base_path)})"
                                     if reason == "file not found" else f"base spec '{base_name}': {reason}")])
        if reads[0] >= MAX_EXTENDS:
            raise SpecError([Problem(mark, ("extends",), f"more than {MAX_EXTENDS} files are read through "
                                                         "'extends:' for this spec; extend fewer bases")])
        base = _load(base_path, stack, reads, shape)
        merged = base if merged is None else merge_loaded(merged, base)
    assert merged is not None  # bases is a non-empty list
    for key in [k for k in loaded.key_marks if k == ("extends",) or k[:1] == ("extends",)]:
        loaded.key_marks.pop(key, None)
        loaded.value_marks.pop(key, None)
    result = merge_loaded(merged, loaded)
    result.source = loaded.source
    return result


def merge_loaded(base: Loaded, child: Loaded) -> Loaded:
    """`child` merged onto `base` (the rules of `extends:` in the module docstring), marks included."""
    out = Loaded(data=None, key_marks=dict(base.key_marks), value_marks=dict(base.value_marks), source=child.source)
    out.data = _merge(out, child, copy_tree(base.data), child.data, ())
    return out


def apply_overrides(loaded: Loaded, overrides: list[str]) -> None:
    """Apply `key.path=value` overrides in place (see the module docstring)."""
    problems: list[Problem] = []
    for text in overrides:
        source = f"override '{text}'"
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(Problem(Mark(source), (), "expected key.path=value"))
            continue
        try:
            value = parse_once(raw, source).data if raw.strip() else None
        except SpecError as error:
            problems.extend(Problem(Mark(source), (), p.message) for p in error.problems)
            continue
        problem = set_value(loaded, key, value, Mark(source))
        if problem:
            problems.append(problem)
    if problems:
        raise SpecError(problems)


def set_value(loaded: Loaded, key: str, value: Any, mark: Mark) -> Problem | None:
    """Set key path `key` (`metrics.1.type`) of `loaded` to `value` in place, as an override does
    (module docstring), the value and its key marked `mark`; the problem when it cannot be set."""
    return _set_path(loaded, key_parts(key), value, mark)


def _set_path(loaded: Loaded, parts: list[str], value: Any, mark: Mark) -> Problem | None:
    if parts[0] == "extends":
        return Problem(mark, ("extends",), "'extends' cannot be overridden; edit the spec file")
    node: Any = loaded.data
    path: Path = ()
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            index = list_index(part, len(node))
            if index is None:
                return Problem(mark, path, f"index '{part}' is not valid for a list of {len(node)} item(s)")
            key: str | int = index
        elif isinstance(node, dict):
            key = part
        else:
            return Problem(mark, path, f"cannot set '{part}': {format_path(path)} is a {type(node).__name__}, not a mapping")
        path = (*path, key)
        if last:
            _drop_marks(loaded, path, node.get(key) if isinstance(node, dict) else node[key])
            node[key] = value
            loaded.key_marks[path] = mark
            loaded.value_marks[path] = mark
            return None
        if isinstance(node, dict) and not isinstance(node.get(key), (dict, list)):
            if key in node and node[key] is not None:
                return Problem(mark, path, f"cannot set '{'.'.join(parts[i + 1:])}' inside a {type(node[key]).__name__}")
            node[key] = {}
            loaded.key_marks[path] = mark
        node = node[key]
    return None


def load_spec(path: str | FsPath, overrides: list[str] | None = None,
              reference_problems: list[Problem] | None = None) -> Loaded:
    """File -> extends merged -> overrides applied -> references resolved (`reference_problems`:
    see `resolve_references`' `collect`)."""
    loaded = load_file(path)
    apply_overrides(loaded, list(overrides or []))
    resolve_references(loaded, collect=reference_problems)
    return loaded
