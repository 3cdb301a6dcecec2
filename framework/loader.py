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
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml

from framework.errors import Mark, Path, Problem, SpecError, format_path
from registry import did_you_mean

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


# libyaml's parser (C) when PyYAML was built with it: the same events and marks as the pure-Python
# one, about 5x faster; `exp validate specs/` spends most of its time parsing.
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that reads `1e-3` and `1E+5` as floats, as YAML 1.2 and JSON do."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@dataclass
class Loaded:
    """Plain data plus, for every key path, the marks of its key and of its value."""

    data: Any
    key_marks: dict[Path, Mark] = field(default_factory=dict)
    value_marks: dict[Path, Mark] = field(default_factory=dict)
    source: str = ""

    def key_mark(self, path: Path) -> Mark | None:
        """The mark of the key at `path`, else of the nearest enclosing key."""
        for end in range(len(path), -1, -1):
            mark = self.key_marks.get(path[:end]) or self.value_marks.get(path[:end])
            if mark:
                return mark
        return None

    def value_mark(self, path: Path) -> Mark | None:
        """The mark of the value at `path`, else of its key, else of the nearest parent."""
        return self.value_marks.get(path) or self.key_mark(path)


def _mark(node: yaml.Node, source: str) -> Mark:
    return Mark(source, node.start_mark.line + 1, node.start_mark.column + 1)


def _construct(node: yaml.Node, path: Path, loader: _Loader, out: Loaded, problems: list[Problem]) -> Any:
    source = out.source
    out.value_marks[path] = _mark(node, source)
    if isinstance(node, yaml.MappingNode):
        if node.tag != _MAP_TAG:
            problems.append(Problem(_mark(node, source), path, f"tag '{node.tag}' is not allowed in a spec"))
            return {}
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems.append(Problem(_mark(key_node, source), path,
                                        "YAML merge keys ('<<') are not supported; use 'extends:'"))
                continue
            key = _scalar(key_node, path, loader, source, problems)
            if not isinstance(key, str):
                problems.append(Problem(_mark(key_node, source), path,
                                        f"keys must be strings, got {type(key).__name__} {key!r}"))
                continue
            if key in result:
                first = out.key_marks[(*path, key)]
                problems.append(Problem(_mark(key_node, source), (*path, key),
                                        f"duplicate key '{key}' (first at line {first.line})"))
                continue
            out.key_marks[(*path, key)] = _mark(key_node, source)
            result[key] = _construct(value_node, (*path, key), loader, out, problems)
        return result
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ_TAG:
            problems.append(Problem(_mark(node, source), path, f"tag '{node.tag}' is not allowed in a spec"))
            return []
        return [_construct(item, (*path, i), loader, out, problems) for i, item in enumerate(node.value)]
    return _scalar(node, path, loader, source, problems)


def _scalar(node: yaml.Node, path: Path, loader: _Loader, source: str, problems: list[Problem]) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as error:
        problems.append(Problem(_mark(node, source), path, f"cannot read value: {error.problem or error}"))
        return None


def parse_yaml(text: str, source: str) -> Loaded:
    """Parse one YAML document into data with marks; raise SpecError on any problem."""
    out = Loaded(data=None, source=source)
    problems: list[Problem] = []
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = Mark(source, mark.line + 1, mark.column + 1) if mark else Mark(source)
        raise SpecError([Problem(where, (), f"invalid YAML: {error.problem or error.context}")]) from None
    finally:
        loader.dispose()
    if node is not None:
        out.data = _construct(node, (), loader, out, problems)
    if problems:
        raise SpecError(problems)
    return out


def read_yaml(path: FsPath, source: str | None = None) -> Loaded:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError([Problem(Mark(str(path)), (), "file not found")]) from None
    return parse_once(text, source or str(path))


# Parsed texts of this process, by (source, text): `exp validate specs/` reads a spec's `extends`
# parents once per child and a sweep applies the same override values to every trial. The key is
# the text itself, not the file's mtime: file times tick in milliseconds, so a file rewritten at
# the same size within one tick would read stale; reading a file costs microseconds, parsing it
# about a millisecond. Oldest entries go first past _PARSED_MAX.
_PARSED: dict[tuple[str, str], Loaded] = {}
_PARSED_MAX = 512


def parse_once(text: str, source: str) -> Loaded:
    """`parse_yaml`, parsed once per (text, source) in this process. Every caller gets its own copy
    (data deep-copied, mark tables copied; marks are immutable), so callers may mutate it. A text
    that does not parse is not cached: its SpecError is raised each time."""
    key = (source, text)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = parse_yaml(text, source)
        if len(_PARSED) >= _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = parsed
    return Loaded(copy_tree(parsed.data), dict(parsed.key_marks), dict(parsed.value_marks), parsed.source)


def copy_tree(value: Any) -> Any:
    """A copy of loaded data: every mapping and list new, scalars shared (the safe loader makes no
    mutable scalar). Several times faster than `copy.deepcopy` on spec-sized data."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def _drop_marks(loaded: Loaded, prefix: Path) -> None:
    for marks in (loaded.key_marks, loaded.value_marks):
        for path in [p for p in marks if p[: len(prefix)] == prefix and len(p) > len(prefix)]:
            del marks[path]


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
                _copy_marks(base, child, sub)
            for marks, child_marks in ((base.key_marks, child.key_marks), (base.value_marks, child.value_marks)):
                if sub in child_marks:
                    marks[sub] = child_marks[sub]
        return merged
    _drop_marks(base, path)
    _copy_marks(base, child, path)
    return data_child


def _copy_marks(base: Loaded, child: Loaded, path: Path) -> None:
    """Every mark of the child at or under `path` replaces the base's."""
    for marks, child_marks in ((base.key_marks, child.key_marks), (base.value_marks, child.value_marks)):
        for p, m in child_marks.items():
            if p[: len(path)] == path:
                marks[p] = m


def _display(path: FsPath) -> str:
    try:
        return str(path.resolve().relative_to(FsPath.cwd()))
    except ValueError:
        return str(path)


def load_file(path: str | FsPath, _stack: tuple[FsPath, ...] = ()) -> Loaded:
    """Read a spec file and merge its `extends:` chain (see the module docstring)."""
    path = FsPath(path)
    resolved = path.resolve()
    loaded = read_yaml(path, _display(path))
    if loaded.data is None:
        loaded.data = {}
    if not isinstance(loaded.data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), "a spec must be a mapping of sections")])
    stack = (*_stack, resolved)
    extends = loaded.data.pop("extends", None)
    if extends is None:
        return loaded
    bases = [extends] if isinstance(extends, str) else extends
    mark = loaded.value_mark(("extends",))
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise SpecError([Problem(mark, ("extends",), "expected a file name or a list of file names")])
    merged: Loaded | None = None
    for base_name in bases:
        base_path = path.parent / base_name
        if base_path.resolve() in stack:
            chain = " -> ".join(_display(p) for p in (*stack, base_path.resolve()))
            raise SpecError([Problem(mark, ("extends",), f"extends cycle: {chain}")])
        if not base_path.is_file():
            raise SpecError([Problem(mark, ("extends",), f"base spec '{base_name}' not found (looked for {_display(base_path)})")])
        base = load_file(base_path, stack)
        merged = base if merged is None else merge_loaded(merged, base)
    assert merged is not None
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
        problem = _set_path(loaded, key.split("."), value, Mark(source))
        if problem:
            problems.append(problem)
    if problems:
        raise SpecError(problems)


def _set_path(loaded: Loaded, parts: list[str], value: Any, mark: Mark) -> Problem | None:
    if parts[0] == "extends":
        return Problem(mark, ("extends",), "'extends' cannot be overridden; edit the spec file")
    node: Any = loaded.data
    path: Path = ()
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.lstrip("-").isdigit() or not -len(node) <= int(part) < len(node):
                return Problem(mark, path, f"index '{part}' is not valid for a list of {len(node)} item(s)")
            key: str | int = int(part) % len(node)
        elif isinstance(node, dict):
            key = part
        else:
            return Problem(mark, path, f"cannot set '{part}': {format_path(path)} is a {type(node).__name__}, not a mapping")
        path = (*path, key)
        if last:
            node[key] = value
            _drop_marks(loaded, path)
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


def _lookup(data: Any, dotted: str) -> Any:
    node = data
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            keys = list(node) if isinstance(node, dict) else []
            raise KeyError(part, did_you_mean(part, keys))
    return node


def reference_targets(text: str) -> list[str]:
    """The key paths a string refers to: `'${a.b}/${c}'` -> `['a.b', 'c']`."""
    return [ref.strip() for ref in _REFERENCE.findall(text)]


def resolve_references(loaded: Loaded, only: set[str] | None = None) -> None:
    """Replace `${a.b}` references in place (see the module docstring). With `only`, just the
    top-level keys named there are resolved (a sweep trial whose overrides reach no reference in
    the other keys, which are already resolved); lookups still read the whole spec."""
    problems: list[Problem] = []

    def resolve(value: Any, path: Path, active: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            return {k: resolve(v, (*path, k), active) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, (*path, i), active) for i, v in enumerate(value)]
        if not isinstance(value, str) or "${" not in value:
            return value
        mark = loaded.value_mark(path)

        def target(ref: str) -> Any:
            ref = ref.strip()
            if ref in active:
                chain = " -> ".join((*active, ref))
                raise ValueError(f"reference cycle: {chain}")
            try:
                found = _lookup(loaded.data, ref)
            except KeyError as error:
                part, hint = error.args
                raise ValueError(f"reference '${{{ref}}}' not found: no key '{part}'.{hint}") from None
            return resolve(found, path, (*active, ref))

        try:
            whole = _REFERENCE.fullmatch(value)
            if whole:
                return copy.deepcopy(target(whole.group(1)))
            return _REFERENCE.sub(lambda m: str(target(m.group(1))), value)
        except ValueError as error:
            if not any(p.path == path for p in problems):
                problems.append(Problem(mark, path, str(error)))
            return value

    if only is None:
        loaded.data = resolve(loaded.data, (), ())
    else:
        loaded.data = {k: resolve(v, (k,), ()) if k in only else v for k, v in loaded.data.items()}
    if problems:
        raise SpecError(problems)


def load_spec(path: str | FsPath, overrides: list[str] | None = None) -> Loaded:
    """File -> extends merged -> overrides applied -> references resolved."""
    loaded = load_file(path)
    apply_overrides(loaded, list(overrides or []))
    resolve_references(loaded)
    return loaded
