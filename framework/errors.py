"""Spec errors: every problem collected, each with where (file:line:col, key path), what, and what
is valid; raised once as a `SpecError`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

Path = tuple[str | int, ...]
_SUGGESTION = re.compile(r"Did you mean '([^']*)'\?")


class Mark(NamedTuple):
    """A place in a source: a YAML file position (1-based) or a command-line override.

    A named tuple rather than a frozen dataclass: the loader makes one for every key and value of
    every file it reads (~65 per spec), and a tuple is made ~4x faster (`exp validate`, issue 13)."""

    source: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.source
        return f"{self.source}:{self.line}:{self.column}"


def format_path(path: Path) -> str:
    """`("metrics", 1, "type")` -> `metrics.1.type`: the one spelling of a key path, the same in
    messages, overrides (`metrics.1.type=auroc`), sweep axes, MLflow params and `exp compare`.
    A list item is its integer index as a segment, like a mapping key."""
    return ".".join(str(part) for part in path) or "<root>"


_INDEX = re.compile(r"^[0-9]{1,18}$")  # ASCII digits only: `int()` also reads `²` and `٣`


def key_parts(text: str) -> list[str]:
    """`metrics.1.type` -> `["metrics", "1", "type"]`: the one reading of a key path as written in
    an override, a sweep axis or a `${...}` reference (`format_path` writes it). Whether a part
    is a list index depends on the value it meets: see `list_index`."""
    return text.strip().split(".")


def list_index(part: str, length: int) -> int | None:
    """The list position a key-path part names in a list of `length` items (`0`, `-1`: ASCII
    digits only, so `²` is not an index), or None: the one reading of an index in a key path."""
    if not _INDEX.match(part.removeprefix("-")) or not -length <= int(part) < length:
        return None
    return int(part) % length


@dataclass(frozen=True)
class Problem:
    mark: Mark | None
    path: Path
    message: str

    def __str__(self) -> str:
        where = f"{self.mark}: " if self.mark else ""
        key = f"{format_path(self.path)}: " if self.path else ""
        return f"{where}{key}{self.message}"

    def to_json(self) -> dict[str, Any]:
        """The problem as `exp validate --format json` writes it: file (or the override), line and
        column (1-based; null for an override or a whole file), key path (as a string and as a
        list), message, and suggestions (the names a "Did you mean" of the message offers)."""
        mark = self.mark or Mark("")
        return {"file": mark.source, "line": mark.line, "column": mark.column, "key": format_path(self.path)
                if self.path else "", "path": list(self.path), "message": self.message,
                "suggestions": _SUGGESTION.findall(self.message)}


class SpecError(ValueError):
    """One or more problems in a spec; `str()` lists them all, one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in spec:"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


class UsageError(Exception):
    """A mistake in what was asked on the command line, outside any spec (a run id that the store
    does not hold): `exp` prints `error: <message>` and exits 2, as for a spec error."""
