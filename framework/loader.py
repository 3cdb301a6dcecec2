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
`SpecFiles` holds the files one command has read, so that each is read and parsed once.
"""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

from dataclasses import dataclass

from framework import validate_cache
from framework.errors import Mark, Path, Problem, SpecError, format_path, key_parts, list_index
from framework.file_text import decode, display_name, file_identity, read_bytes
from framework.marked_yaml import Loaded, copy_tree, parse_yaml
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


def load_file(path: str | FsPath, shape: str = SPEC_SHAPE, files: SpecFiles | None = None) -> Loaded:
    """Read a spec file and merge its `extends:` chain (see the module docstring). The file holds
    one mapping (`shape` says of what, in the message of an empty file or another value).
    `files`: the files this command has read (`SpecFiles`); without it, every file is read."""
    if files is None:
        return _load(FsPath(path), (), [0], shape, SpecFiles())
    return files.load(path, shape)


@dataclass
class _File:
    """One file as `SpecFiles` read it: what tells it apart (`file_identity`), why it cannot be
    read (None: it can), the digest of its bytes, and its parsed text or the SpecError of reading it."""

    identity: Any
    reason: str | None
    digest: str | None
    parsed: Loaded | SpecError


class SpecFiles:
    """The files one command reads: each read from disk and parsed once, and each spec's `extends`
    chain merged once, however often the command loads it. `exp validate` loads a spec for its own
    check, for its sweep's trials and for each claims file that names it, and a base for each spec
    that extends it: about five loads per file of specs/. Made by the command and handed to what
    loads (`load_file`, `load_spec`, `framework.plan.SweepChecker`, `framework.claims.load_claims`);
    a file that changes while the command runs is seen as first read. Each use of a file is noted
    for the validation cache as a read (framework/validate_cache.py), and every caller gets its
    own copy. The KEPT files and chains used last are kept (a folder of specs and its bases fit)."""

    KEPT = 512

    def __init__(self) -> None:
        self._files: dict[str, _File] = {}
        self._chains: dict[tuple[str, str], tuple[Loaded | SpecError, list[tuple[str, str | None]]]] = {}
        self._noting: list[list[tuple[str, str | None]]] = []  # the uses of each chain being merged

    def _note(self, path: str, digest: str | None) -> None:
        validate_cache.note_read(path, digest)
        for notes in self._noting:
            notes.append((path, digest))

    def _file(self, path: FsPath) -> _File:
        key = str(path)
        found = self._files.pop(key, None)
        if found is None:
            reason, data = read_bytes(path)
            source = display_name(path)
            try:
                parsed: Loaded | SpecError = parse_yaml(decode(reason, data, source), source)
            except SpecError as error:
                parsed = error
            found = _File(file_identity(path), reason, None if data is None else validate_cache.digest(data), parsed)
            if len(self._files) >= self.KEPT:
                del self._files[next(iter(self._files))]
        self._files[key] = found  # last used, last out
        return found

    def identity(self, path: FsPath) -> Any:
        """`file_identity(path)`, for the `extends` cycle check."""
        return self._file(path).identity

    def unreadable(self, path: FsPath) -> str | None:
        """Why `path` cannot be read as a spec file (`framework.file_text.unreadable`), or None."""
        reason = self._file(path).reason
        if reason is not None:
            self._note(str(path), None)  # a stored validation depends on its absence too
        return reason

    def parsed(self, path: FsPath) -> Loaded:
        """The file's text parsed, a copy the caller may change; or its SpecError."""
        found = self._file(path)
        self._note(str(path), found.digest)
        if isinstance(found.parsed, SpecError):
            raise SpecError(found.parsed.problems)
        return found.parsed.copy()

    def load(self, path: str | FsPath, shape: str = SPEC_SHAPE) -> Loaded:
        """`load_file(path, shape)`: merged once, then copied; or its SpecError."""
        key = (str(path), shape)
        kept = self._chains.pop(key, None)
        if kept is None:
            notes: list[tuple[str, str | None]] = []
            self._noting.append(notes)
            try:
                merged: Loaded | SpecError = _load(FsPath(path), (), [0], shape, self)
            except SpecError as error:
                merged = error
            finally:
                self._noting.pop()
            kept = (merged, notes)
            if len(self._chains) >= self.KEPT:
                del self._chains[next(iter(self._chains))]
        else:
            for used, digest in kept[1]:
                self._note(used, digest)
        self._chains[key] = kept
        if isinstance(kept[0], SpecError):
            raise SpecError(kept[0].problems)
        return kept[0].copy()


def _load(path: FsPath, stack: tuple[tuple[Any, str], ...], reads: list[int], shape: str, files: SpecFiles) -> Loaded:
    """`stack`: (identity, display name) of the files whose `extends` led here; `reads`: how
    many files this spec has read so far (MAX_EXTENDS)."""
    reads[0] += 1
    return _merge_bases(path, files.parsed(path), stack, reads, shape, files)


def _merge_bases(path: FsPath, loaded: Loaded, stack: tuple[tuple[Any, str], ...], reads: list[int],
                 shape: str, files: SpecFiles) -> Loaded:
    if loaded.data is None:
        raise SpecError([Problem(Mark(loaded.source), (), f"file is empty (or only whitespace and comments): {shape}")])
    if not isinstance(loaded.data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), f"expected a mapping at the top level, got a "
                                                            f"{type(loaded.data).__name__}: {shape}")])
    stack = (*stack, (files.identity(path), loaded.source))
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
        if files.identity(base_path) in (identity for identity, _ in stack):
            chain = " -> ".join([*(name for _, name in stack), display_name(base_path)])
            raise SpecError([Problem(mark, ("extends",), f"extends cycle: {chain}")])
        reason = files.unreadable(base_path)
        if reason:
            raise SpecError([Problem(mark, ("extends",), f"base spec '{base_name}' not found (looked for {display_name(base_path)})"
                                     if reason == "file not found" else f"base spec '{base_name}': {reason}")])
        if reads[0] >= MAX_EXTENDS:
            raise SpecError([Problem(mark, ("extends",), f"more than {MAX_EXTENDS} files are read through "
                                                         "'extends:' for this spec; extend fewer bases")])
        base = _load(base_path, stack, reads, shape, files)
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
            value = parse_yaml(raw, source).data if raw.strip() else None
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
              reference_problems: list[Problem] | None = None, files: SpecFiles | None = None) -> Loaded:
    """File -> extends merged -> overrides applied -> references resolved (`reference_problems`:
    see `resolve_references`' `collect`; `files`: see `load_file`)."""
    loaded = load_file(path, files=files)
    apply_overrides(loaded, list(overrides or []))
    resolve_references(loaded, collect=reference_problems)
    return loaded
