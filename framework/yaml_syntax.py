"""libyaml's syntax errors in plain words, with the usual cause as a hint (a tab, an unquoted
`${...}` in a flow mapping, an unclosed bracket or quote, a missing colon, a misaligned line)."""

from __future__ import annotations

import re

import yaml

_OPENERS = {"flow mapping": ("{", "}", "mapping", "{seed: '${seed}'}"), "flow sequence": ("[", "]", "list", "['${seed}']")}


def syntax_words(error: yaml.MarkedYAMLError, text: str) -> str:
    """libyaml's complaint in plain words, with the usual cause as a hint: a tab, an unquoted
    `${...}` in a `{...}` flow mapping, an unclosed bracket or quote, a missing colon, a line
    indented out of line, a value holding ': '. libyaml's own words where none applies."""
    problem, context = error.problem or "", error.context or ""
    lines = text.splitlines()
    at, start = error.problem_mark, error.context_mark
    line = lines[at.line] if at and at.line < len(lines) else ""
    if "\t" in line[: (at.column if at else 0) + 1] and "cannot start any token" in problem:
        return "a tab character: YAML indents with spaces only; replace the tab with spaces"
    flow = next((words for name, words in _OPENERS.items() if name in context), None)
    if flow and start and at:
        opener, closer, noun, example = flow
        span = "\n".join(lines[start.line: at.line + 1])
        opened = f"the '{opener}' at line {start.line + 1}, column {start.column + 1}"
        if "${" in span:
            return (f"a ${{...}} reference inside a {opener}...{closer} flow {noun} must be quoted "
                    f"(YAML reads '{{' as the start of a mapping): write it in quotes, as in {example}")
        return f"{opened} is not closed by '{closer}', or a comma is missing between two items"
    if "quoted scalar" in context and start:
        return f"the quoted string that starts at line {start.line + 1}, column {start.column + 1} is never closed"
    above = _line_above(lines, at.line) if at else None
    if problem == "mapping values are not allowed in this context" and at:
        if above and ":" not in lines[above - 1] and not lines[above - 1].lstrip().startswith("-"):
            return f"line {above} has no ':' after its key (write 'key: value'), so this line continues it"
        if above and _indent(line) > _indent(lines[above - 1]):
            return (f"this line is indented more than line {above} above it; the keys of one mapping start "
                    "in the same column")
        return "a value holds ': ' (a colon and a space); quote the value, as in title: 'a: b'"
    if re.search(r"'[^']*'[^\s,\]}#]", line):
        return "a quote inside a '...' string is written twice ('it''s'), or use double quotes (\"it's\")"
    if problem in ("did not find expected key", "did not find expected '-' indicator") or \
            problem.startswith("expected <block end>"):
        return (f"line {at.line + 1 if at else '?'} is not in line with the lines above it: the keys of one "
                "mapping start in the same column, and so do the '-' of one list's items")
    return problem or context


def _line_above(lines: list[str], index: int) -> int | None:
    """The 1-based number of the nearest line above `index` (0-based) that holds more than a comment."""
    for i in range(min(index, len(lines)) - 1, -1, -1):
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            return i + 1
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
