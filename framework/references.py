"""`${a.b}` references, resolved against the merged and overridden spec (rule 4 of
`framework.loader`), within limits: at most `MAX_REFERENCE_VALUES` values may come from expanding
references, a string built from references has at most `MAX_REFERENCE_TEXT` characters, a chain of
references (`${a}` whose value is `${b}` ...) and the nesting of the result are at most `MAX_DEPTH`
long. A key the spec does not write refers to its default in the operative spec."""

from __future__ import annotations

import copy
import re
from typing import Any

from framework.errors import Path, Problem, SpecError, key_parts, list_index
from framework.marked_yaml import MAX_DEPTH, TOO_DEEP, LimitExceeded, Loaded, outer_path
from registry import did_you_mean

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
MAX_REFERENCE_VALUES = 10_000
MAX_REFERENCE_TEXT = 10_000


def _lookup(data: Any, dotted: str) -> Any:
    node = data
    for part in key_parts(dotted):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and list_index(part, len(node)) is not None and not part.startswith("-"):
            node = node[int(part)]
        else:
            keys = list(node) if isinstance(node, dict) else []
            raise KeyError(part, did_you_mean(part, keys))
    return node


def _operative_value(data: Any, ref: str) -> Any:
    """A key the spec does not write: its default in the operative spec (`framework.defaults`),
    else a ValueError that says what is there."""
    from framework.defaults import NotFound, operative_value

    try:
        return operative_value(data, key_parts(ref))
    except NotFound as error:
        raise ValueError(f"reference '${{{ref}}}' not found: {error.message}") from None


def reference_targets(text: str) -> list[str]:
    """The key paths a string refers to: `'${a.b}/${c}'` -> `['a.b', 'c']`."""
    return [ref.strip() for ref in _REFERENCE.findall(text)]


class _References:
    """Resolves `${a.b}` references (module docstring), within the limits: values that come from
    expanding references (each time a reference is expanded: no sharing), the characters of a
    string built from them, the nesting of the result and the length of a chain of references."""

    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.problems: list[Problem] = []
        self.expanded = 0

    def stop(self, path: Path, message: str, shown: Path | None = None) -> LimitExceeded:
        return LimitExceeded(Problem(self.loaded.value_mark(path), path if shown is None else shown, message))

    def resolve(self, value: Any, path: Path, active: tuple[str, ...], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.stop(path, f"{TOO_DEEP}, references resolved", shown=outer_path(path))
        if active:
            self.expanded += 1
            if self.expanded > MAX_REFERENCE_VALUES:
                raise self.stop(path, f"references ('${{...}}') expand to more than {MAX_REFERENCE_VALUES} "
                                      "values (a reference bomb?); refer to fewer or smaller values")
        if isinstance(value, dict):
            return {k: self.resolve(v, (*path, k), active, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, (*path, i), active, depth + 1) for i, v in enumerate(value)]
        if not isinstance(value, str) or "${" not in value:
            return value
        try:
            whole = _REFERENCE.fullmatch(value)
            if whole:
                return copy.deepcopy(self.target(whole.group(1), path, active, depth))
            return self.format(value, path, active, depth)
        except ValueError as error:
            if not any(p.path == path for p in self.problems):
                self.problems.append(Problem(self.loaded.value_mark(path), path, str(error)))
            return value

    def target(self, ref: str, path: Path, active: tuple[str, ...], depth: int) -> Any:
        ref = ref.strip()
        if ref in active:
            raise ValueError(f"reference cycle: {' -> '.join((*active, ref))}")
        if len(active) >= MAX_DEPTH:
            raise self.stop(path, f"a chain of more than {MAX_DEPTH} references ('${{a}}' -> '${{b}}' -> ...)")
        try:
            found = _lookup(self.loaded.data, ref)
        except KeyError:
            found = _operative_value(self.loaded.data, ref)
        return self.resolve(found, path, (*active, ref), depth)

    def format(self, value: str, path: Path, active: tuple[str, ...], depth: int) -> str:
        """A string with references formatted into it, at most MAX_REFERENCE_TEXT characters."""
        length = len(_REFERENCE.sub("", value))  # the literal text; each reference adds its value's

        def piece(match: re.Match[str]) -> str:
            nonlocal length
            text = str(self.target(match.group(1), path, active, depth))
            length += len(text)
            if length > MAX_REFERENCE_TEXT:
                raise self.stop(path, f"references ('${{...}}') make a string longer than {MAX_REFERENCE_TEXT} "
                                      "characters (a reference bomb?)")
            return text

        return _REFERENCE.sub(piece, value)


def _plain(value: Any, depth: int) -> bool:
    """No string in `value` holds `${`, and nothing nests past MAX_DEPTH (`_References.resolve`'s
    depth count). Cheaper than resolving: no key paths are built and no container is copied."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, list):
        return True
    for item in value:
        if not _plain(item, depth + 1):
            return False
    return True


def resolve_references(loaded: Loaded, only: set[str] | None = None, collect: list[Problem] | None = None) -> None:
    """Replace `${a.b}` references in place (see the module docstring). With `only`, just the
    top-level keys named there are resolved (a sweep trial whose overrides reach no reference in
    the other keys, which are already resolved); lookups still read the whole spec. With
    `collect`, a reference that cannot be resolved is added to it and left as written, so that
    validation can report the spec's other problems too (a limit still raises at once)."""
    if only is None and _plain(loaded.data, 0):
        return  # nothing to resolve, and within MAX_DEPTH: the walk below would rebuild it as it is
    references = _References(loaded)
    try:
        if only is None:
            loaded.data = references.resolve(loaded.data, (), (), 0)
        else:
            loaded.data = {k: references.resolve(v, (k,), (), 1) if k in only else v
                           for k, v in loaded.data.items()}
    except LimitExceeded as limit:
        raise SpecError([*references.problems, limit.problem]) from None
    if references.problems and collect is not None:
        collect.extend(references.problems)
    elif references.problems:
        raise SpecError(references.problems)
