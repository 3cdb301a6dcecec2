"""Old spellings: when a check of `framework.validate` fails, `OLD_SPELLINGS` is consulted before
the generic message. Each entry names the check (`terms`: a weighted mapping is not a mapping;
`term name`: a term name is not lower_snake_case; `argument`: a component has no such argument),
says when the failure is an old spelling, and writes the message in the new spelling (the list of
terms as the equivalent mapping, `loss.terms.<name>.weight` for an index, where a weight now goes).
A later rename adds one entry to `OLD_SPELLINGS`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from framework.errors import format_path
from framework.marked_yaml import dump_line


def _as_named_terms(terms: list[Any], pattern: str) -> dict[str, Any]:
    """A list of terms (the old spelling) as the equivalent mapping: each term named after its
    type, a repeated type suffixed from its second occurrence on (mse, mse_1), nested lists too;
    a term whose type is no valid name is `term_<index>`."""
    named: dict[str, Any] = {}
    for index, term in enumerate(terms):
        type_name = term.get("type") if isinstance(term, dict) else None
        base = type_name if isinstance(type_name, str) and re.match(pattern, type_name) else f"term_{index}"
        name, suffix = base, 0
        while name in named:
            suffix += 1
            name = f"{base}_{suffix}"
        if isinstance(term, dict) and isinstance(term.get("terms"), list):
            term = {**term, "terms": _as_named_terms(term["terms"], pattern)}
        named[name] = term
    return named


def _listed_terms(value: Any, where: dict[str, Any]) -> str:
    named = _as_named_terms(value, where["pattern"])
    weighted = [n for n, t in named.items() if isinstance(t, dict) and "weight" in t] or list(named)
    example = format_path((*where["path"], weighted[-1], "weight")) if named else format_path((*where["path"], "<name>"))
    return (f"terms are named, not listed, so that a key path such as {example} stays on its term "
            f"when terms are reordered; write terms: {dump_line(named)}")


def _numbered_term(value: Any, where: dict[str, Any]) -> str:
    term = where["term"]
    rest = f".{next(iter(term))}" if isinstance(term, dict) and len(term) == 1 else ""
    names = ", ".join(where["names"]) or "none"
    return (f"terms are named, not numbered: write {format_path(where['path'])}.<name>{rest} "
            f"with <name> one of: {names}")


def _lone_weight(value: Any, where: dict[str, Any]) -> str:
    owner = where["owner"]
    term = dump_line({"type": "weighted_sum", "terms": {owner: {"type": owner, "weight": where["given"]}}})
    return f"{owner} has no argument 'weight'; a weight belongs to a term of weighted_sum: {term}"


@dataclass(frozen=True)
class OldSpelling:
    """A spelling the spec language no longer accepts, and how to write it now (see the module
    docstring). `applies(value, where)` and `advice(value, where)` get the offending value (a
    node, a name, a key) and what the failed check knows about its place (`where`)."""

    check: str
    applies: Callable[[Any, dict[str, Any]], bool]
    advice: Callable[[Any, dict[str, Any]], str]


OLD_SPELLINGS: list[OldSpelling] = [
    # Terms of weighted_sum were a list, addressed by index (loss.terms.1.weight): reordering them
    # silently moved every override, sweep axis and compared param to another term.
    OldSpelling("terms", lambda value, where: isinstance(value, list), _listed_terms),
    OldSpelling("term name", lambda value, where: str(value).isdigit(), _numbered_term),
    # Every loss took a `weight`, applied only inside weighted_sum and silently ignored elsewhere.
    OldSpelling("argument", lambda value, where: where["kind"] == "losses" and value == "weight", _lone_weight),
]


def old_spelling(check: str, value: Any, **where: Any) -> str | None:
    """The message of the first `OLD_SPELLINGS` entry that explains this failed check, if any."""
    for entry in OLD_SPELLINGS:
        if entry.check == check and entry.applies(value, where):
            return entry.advice(value, where)
    return None
