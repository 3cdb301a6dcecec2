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

What is read, and the limits on the work a file may ask for (each breach is a SpecError at the
file, line and column where it happens, never a crash or a hang):

- A spec (or claims) file is a regular file of UTF-8 text, at most `MAX_FILE_BYTES` (a UTF-8
  byte-order mark is skipped; a UTF-16/32 one, a byte that is not UTF-8, and a control
  character other than tab, newline and carriage return are errors at their line and column). A
  file that is empty, or only whitespace and comments, is an error that names the file.
- Tags: plain YAML types only. A scalar may be tagged `!!str`, `!!int`, `!!float`, `!!bool` or
  `!!null` (and its text must read as that type: `!!int 'abc'` is an error), a list `!!seq`, a
  mapping `!!map`; every other tag (`!!binary`, `!!timestamp`, `!!set`, `!!python/...`, local
  `!tags`) is rejected.
- Numbers: an integer lies in [-2**63, 2**64 - 1] (64 bits; a longer one is not converted at
  all); a float literal that overflows a 64-bit float (`1e400`) is an error (`.inf` is infinite).
- Nesting: at most `MAX_DEPTH` levels of lists and mappings, in a file, an override and the
  spec after references are resolved. A value that contains itself (`a: &a [*a]`) is an error.
- Aliases (`*name`): at most `MAX_ALIAS_VALUES` values (lists, mappings and scalars) per file or
  override may come from expanding aliases, so an alias bomb ("billion laughs") stops early.
- References (`${a.b}`): at most `MAX_REFERENCE_VALUES` values may come from expanding
  references, a string built from references has at most `MAX_REFERENCE_TEXT` characters, and a
  chain of references (`${a}` whose value is `${b}` ...) is at most `MAX_DEPTH` long.
- `extends:` reads at most `MAX_EXTENDS` files for one spec (the spec included).
"""

from __future__ import annotations

import copy
import errno
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml

from framework import validate_cache
from framework.errors import Mark, Path, Problem, SpecError, format_path, key_parts, list_index
from registry import did_you_mean

_REFERENCE = re.compile(r"\$\{([^}]*)\}")


# libyaml's emitter when PyYAML has it (the text is the pure-Python emitter's, ~3x faster: a sweep
# writes each axis value once, 10,000-trial grids included).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_line(value: Any) -> str:
    """A value as one line of flow-style YAML, mapping keys in the order written: the one spelling
    of a value in overrides, sweep axes, messages, provenance and MLflow params."""
    return yaml.dump(value, Dumper=_DUMPER, default_flow_style=True, sort_keys=False,
                     width=1 << 20).strip().removesuffix("\n...")


_YAML_TAG = "tag:yaml.org,2002:"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_INT_TAG = "tag:yaml.org,2002:int"
_STR_TAG = "tag:yaml.org,2002:str"
_SCALAR_TAGS = {f"{_YAML_TAG}{name}" for name in ("str", "int", "float", "bool", "null")}

# The limits of the module docstring.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_ALIAS_VALUES = 10_000
MAX_REFERENCE_VALUES = 10_000
MAX_REFERENCE_TEXT = 10_000
INT_RANGE = (-(1 << 63), (1 << 64) - 1)
# Characters YAML does not accept in a stream (all but YAML 1.1's "printable": tab, LF, CR,
# x20-x7E, x85, xA0-xD7FF, xE000-xFFFD, x10000-x10FFFF); a lone surrogate is a byte of an override
# that was not UTF-8. Written as what is refused: the complement class took ~9 ms to compile, a
# fiftieth of `exp validate` (tests/framework/test_loader.py checks both agree on every code point).
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
# libyaml composes nodes recursively in C (it crashes at ~30,000 levels) and scans deep flow
# nesting in quadratic time (10,000 levels: 1.6 s). A text with at most this many of the
# characters that open a level (`[ { - ? :`) cannot nest deeper, and is composed at once;
# another is first read as events, to stop at the first level deeper than MAX_DEPTH.
_COMPOSE_SAFE = 2000


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

    def copy(self) -> Loaded:
        """A copy the caller may change: every mapping and list new (scalars and marks shared)."""
        return Loaded(copy_tree(self.data), dict(self.key_marks), dict(self.value_marks), self.source)


def _mark(node: yaml.Node, source: str) -> Mark:
    return Mark(source, node.start_mark.line + 1, node.start_mark.column + 1)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG):] if tag.startswith(_YAML_TAG) else tag


class _Limit(Exception):
    """A limit of the module docstring was passed: constructing stops at once."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem


class _Builder:
    """Plain data with marks from a composed node graph, within the limits (module docstring).

    A collection met a second time was reached through an alias: it and every value built under
    it count towards MAX_ALIAS_VALUES (a scalar alias is one value, and counts too once inside
    one). A collection met again while it is still being built contains itself."""

    def __init__(self, loader: _Loader, out: Loaded, problems: list[Problem]) -> None:
        self.loader, self.out, self.problems = loader, out, problems
        self.built: set[int] = set()
        self.open: set[int] = set()
        self.aliased = 0

    def stop(self, node: yaml.Node, path: Path, message: str, shown: Path | None = None) -> _Limit:
        """The limit's problem at the nearest key written on `path` (an aliased node's own mark is
        its anchor's), reported at key path `shown` (default: `path`)."""
        mark = next((self.out.key_marks[path[:end]] for end in range(len(path), 0, -1)
                     if path[:end] in self.out.key_marks), _mark(node, self.out.source))
        return _Limit(Problem(mark, path if shown is None else shown, message))

    def build(self, node: yaml.Node, path: Path, via_alias: bool = False) -> Any:
        collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
        if collection:  # a scalar alias is one value: only a collection can be a bomb, or contain itself
            if len(path) >= MAX_DEPTH:  # its items would be one level deeper than MAX_DEPTH
                raise self.stop(node, (*path, 0), _TOO_DEEP, shown=_outer(path))
            if id(node) in self.open:
                raise self.stop(node, path, "this value contains itself (a recursive alias '*' inside its own anchor '&')")
            via_alias = via_alias or id(node) in self.built
        if via_alias:
            self.aliased += 1
            if self.aliased > MAX_ALIAS_VALUES:
                raise self.stop(node, path, f"aliases ('*name') expand to more than {MAX_ALIAS_VALUES} values "
                                            f"(an alias bomb?); write the values out, or use fewer aliases")
        if not collection:
            self.out.value_marks[path] = _mark(node, self.out.source)
            value = self.scalar(node, path)
            return None if value is _UNREADABLE else value
        self.built.add(id(node))
        self.open.add(id(node))
        try:
            return self.collection(node, path, via_alias)
        finally:
            self.open.discard(id(node))

    def collection(self, node: yaml.Node, path: Path, via_alias: bool) -> Any:
        source, out, problems = self.out.source, self.out, self.problems
        out.value_marks[path] = _mark(node, source)
        expected = _MAP_TAG if isinstance(node, yaml.MappingNode) else _SEQ_TAG
        if node.tag != expected:
            problems.append(Problem(_mark(node, source), path, _tag_message(node.tag)))
            return {} if expected == _MAP_TAG else []
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), via_alias) for i, item in enumerate(node.value)]
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems.append(Problem(_mark(key_node, source), path,
                                        "YAML merge keys ('<<') are not supported; use 'extends:'"))
                continue
            key = self.scalar(key_node, path) if isinstance(key_node, yaml.ScalarNode) else \
                [] if isinstance(key_node, yaml.SequenceNode) else {}
            if key is _UNREADABLE:
                continue
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
            result[key] = self.build(value_node, (*path, key), via_alias)
        return result

    def scalar(self, node: yaml.Node, path: Path) -> Any:
        """A scalar of a plain type (module docstring), or `_UNREADABLE` with a problem recorded."""
        plain = node.tag in _SCALAR_TAGS and len(node.value) <= 40  # the common case, checked quickly
        message = None if plain else _scalar_problem(node)
        if message is None:
            if node.tag == _STR_TAG:
                return node.value  # what the safe constructor returns for a string, without its dispatch
            try:
                value = self.loader.yaml_constructors[node.tag](self.loader, node)  # scalars: no recursion
            except (yaml.YAMLError, ValueError, KeyError) as error:  # !!int 'abc' (ValueError), !!bool maybe (KeyError)
                detail = f": {error.problem}" if isinstance(error, yaml.MarkedYAMLError) and error.problem else ""
                message = f"cannot read {node.value!r} as {_short_tag(node.tag)}{detail}"
            else:
                message = _number_problem(node, value) if type(value) in (int, float) else None
                if message is None:
                    return value
        self.problems.append(Problem(_mark(node, self.out.source), path, message))
        return _UNREADABLE


# A scalar that could not be read (its problem is recorded); it stands in the data as null.
_UNREADABLE: Any = object()
_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels of lists and mappings (a spec nests at most {MAX_DEPTH})"


def _outer(path: Path) -> Path:
    """The start of a (too) deep key path, to show: up to its first list index, at most 8 keys."""
    end = next((i for i, part in enumerate(path) if isinstance(part, int)), len(path))
    return path[:min(max(end, 1), 8)]


def _tag_message(tag: str) -> str:
    return (f"tag '{_short_tag(tag)}' is not allowed in a spec (allowed: plain values, or the tags "
            "!!str, !!int, !!float, !!bool, !!null, !!seq, !!map)")


def _scalar_problem(node: yaml.Node) -> str | None:
    """What makes a scalar unreadable before it is converted: its tag, or an integer too long."""
    if node.tag not in _SCALAR_TAGS:
        return _tag_message(node.tag)
    if node.tag == _INT_TAG and len(node.value) > 40:  # never converted: Python refuses above 4300 digits
        digits = sum(c.isdigit() for c in node.value)
        if digits > 40:
            return (f"an integer of {digits} digits is out of range: a spec's integers lie between "
                    f"-2**63 and 2**64-1 (64 bits)")
    return None


def _number_problem(node: yaml.Node, value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and not INT_RANGE[0] <= value <= INT_RANGE[1]:
        return f"integer {value} is out of range: a spec's integers lie between -2**63 and 2**64-1 (64 bits)"
    if isinstance(value, float) and math.isinf(value) and "inf" not in node.value.lower():
        return f"number {node.value} is too large for a 64-bit float (at most about 1.8e308)"
    return None


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of the character at `index` of `text`."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _text_problem(text: str, source: str) -> Problem | None:
    """A character YAML does not accept, at its line and column."""
    found = _NOT_PRINTABLE.search(text)
    if not found:
        return None
    char = found.group()
    line, column = _position(text, found.start())
    if "\udc80" <= char <= "\udcff":  # surrogateescape: a byte of a command-line argument
        message = f"byte 0x{ord(char) - 0xDC00:02x} is not valid UTF-8"
    else:
        hint = " (is the file UTF-16, or not text?)" if char == "\x00" else ""
        message = (f"character U+{ord(char):04X} ({char!r}) is not allowed{hint}; YAML text has no control "
                   "characters other than tab, newline and carriage return")
    return Problem(Mark(source, line, column), (), message)


def _invalid_yaml(error: yaml.MarkedYAMLError, source: str, text: str = "") -> Problem:
    mark = error.problem_mark or error.context_mark
    where = Mark(source, mark.line + 1, mark.column + 1) if mark else Mark(source)
    if "maximum nesting depth" in str(error.problem):  # libyaml >= 0.2.5 has a nesting limit of its own
        return Problem(where, (), _TOO_DEEP)
    return Problem(where, (), f"invalid YAML: {_syntax_words(error, text)}")


_OPENERS = {"flow mapping": ("{", "}", "mapping", "{seed: '${seed}'}"), "flow sequence": ("[", "]", "list", "['${seed}']")}


def _syntax_words(error: yaml.MarkedYAMLError, text: str) -> str:
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


def _depth_problem(text: str, source: str) -> Problem | None:
    """The first place the text nests deeper than MAX_DEPTH, read from events (see _COMPOSE_SAFE)."""
    if sum(text.count(c) for c in "[{-?:") <= _COMPOSE_SAFE:
        return None
    loader, depth = _Loader(text), 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    return Problem(Mark(source, mark.line + 1, mark.column + 1), (), _TOO_DEEP)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as error:
        return _invalid_yaml(error, source, text)
    finally:
        loader.dispose()
    return None


def parse_yaml(text: str, source: str) -> Loaded:
    """Parse one YAML document into data with marks; raise SpecError on any problem (within the
    limits of the module docstring)."""
    out = Loaded(data=None, source=source)
    problems: list[Problem] = []
    problem = _text_problem(text, source) or _depth_problem(text, source)
    if problem:
        raise SpecError([problem])
    if not text.strip():  # libyaml rejects a line of tabs, which holds nothing either
        return out
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as error:
        raise SpecError([_invalid_yaml(error, source, text)]) from None
    finally:
        loader.dispose()
    if node is not None:
        try:
            out.data = _Builder(loader, out, problems).build(node, ())
        except _Limit as limit:
            raise SpecError([*problems, limit.problem]) from None
    if problems:
        raise SpecError(problems)
    return out


def _unreadable(path: FsPath) -> str | None:
    """Why `path` cannot be read as a spec file, or None when it is a regular file."""
    reason = _why_unreadable(path)
    if reason is not None:
        validate_cache.note_read(path, None)  # a stored validation depends on its absence too
    return reason


def _read(path: FsPath) -> tuple[str | None, bytes | None]:
    """(why `path` cannot be read as a spec file, None) or (None, its bytes): at most
    MAX_FILE_BYTES + 1 of them, so that a larger file is known to be one."""
    reason, data = _why_unreadable(path), None
    if reason is None:
        try:
            with open(path, "rb") as file:
                # Read what the file holds, not MAX_FILE_BYTES: `read(n)` allocates n bytes first
                # (1 MiB: 3x the cost of reading a spec). A file grown since `fstat` is read on.
                expected = min(os.fstat(file.fileno()).st_size, MAX_FILE_BYTES) + 1
                data = file.read(expected)
                if len(data) == expected <= MAX_FILE_BYTES:
                    data += file.read(MAX_FILE_BYTES + 1 - len(data))
        except OSError as error:
            reason, data = f"cannot read the file: {(error.strerror or str(error)).lower()}", None
    return reason, data


def _why_unreadable(path: FsPath) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file not found"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "cannot read the file: it is a symlink loop (too many levels of symbolic links)"
        return f"cannot read the file: {error.strerror or error}"
    if stat.S_ISDIR(mode):
        return "is a directory, not a spec file"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a spec is a YAML text file)"
    return None


def read_text(path: FsPath, source: str) -> str:
    """The text of a spec file (module docstring: a regular UTF-8 file, at most MAX_FILE_BYTES)."""
    reason, data = _read(path)
    validate_cache.note_read(path, data)  # what a stored validation depends on (None: unreadable)
    if reason or data is None:
        raise SpecError([Problem(Mark(source), (), reason)])
    if len(data) > MAX_FILE_BYTES:
        raise SpecError([Problem(Mark(source), (), f"file is larger than {MAX_FILE_BYTES} bytes: a spec "
                                                   "is a short YAML text written by hand (is this a spec?)")])
    for bom, encoding in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                          (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            raise SpecError([Problem(Mark(source, 1, 1), (), f"the file is {encoding} text (it starts with a "
                                                             f"{encoding} byte-order mark); save it as UTF-8")])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        line = data.count(b"\n", 0, error.start) + 1
        column = len(data[line_start:error.start].decode("utf-8", "replace")) + 1
        raise SpecError([Problem(Mark(source, line, column), (), f"byte 0x{data[error.start]:02x} is not valid "
                                                                 "UTF-8; save the file as UTF-8")]) from None


# Parsed texts of this process, by (source, text): the one in-process cache of loading. `exp
# validate` loads a file for its own check, as the base of each spec that extends it, for its
# sweep's trials and for each claims file that names it: ~5 loads per file of specs/, and parsing
# is most of a load (without this cache `exp validate` of 10 copies of specs/ took 1.5x the CPU
# time: /work/notes/s32/r1.md). The key is the text itself, not the file's mtime: a file
# rewritten at the same size within one tick of the clock would read stale. Oldest entries go
# first past _PARSED_MAX.
_PARSED: dict[tuple[str, str], Loaded] = {}
_PARSED_MAX = 512


def parse_once(text: str, source: str) -> Loaded:
    """`parse_yaml`, parsed once per (text, source) in this process; every caller gets its own copy
    (`Loaded.copy`). A text that does not parse is not cached: its SpecError is raised each time."""
    key = (source, text)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = parse_yaml(text, source)
        if len(_PARSED) >= _PARSED_MAX:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = parsed
    return parsed.copy()


def copy_tree(value: Any) -> Any:
    """A copy of loaded data: every mapping and list new, scalars shared (the safe loader makes no
    mutable scalar). Several times faster than `copy.deepcopy` on spec-sized data."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


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


def _display(path: FsPath) -> str:
    """The path as messages name it: relative to the working folder when it lies under it (`..`
    folded by text), else as given. No symlink is followed: this runs for every file read, and
    resolving a path costs a system call per folder in it."""
    cwd = os.getcwd()
    full = os.path.normpath(os.path.join(cwd, path))
    return full[len(cwd) + 1:] if full.startswith(cwd + os.sep) else str(path)


def _identity(path: FsPath) -> tuple[int, int] | str:
    """What makes two paths one file, for the `extends` cycle check: its device and inode (symlinks
    and `..` followed by the one stat), or the absolute path of a file that cannot be stat'ed."""
    try:
        found = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return found.st_dev, found.st_ino


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
    source = _display(path)
    return _merge_bases(path, parse_once(read_text(path, source), source), stack, reads, shape)


def _merge_bases(path: FsPath, loaded: Loaded, stack: tuple[tuple[Any, str], ...], reads: list[int],
                 shape: str) -> Loaded:
    if loaded.data is None:
        raise SpecError([Problem(Mark(loaded.source), (), f"file is empty (or only whitespace and comments): {shape}")])
    if not isinstance(loaded.data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), f"expected a mapping at the top level, got a "
                                                            f"{type(loaded.data).__name__}: {shape}")])
    stack = (*stack, (_identity(path), loaded.source))
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
        if _identity(base_path) in (identity for identity, _ in stack):
            chain = " -> ".join([*(name for _, name in stack), _display(base_path)])
            raise SpecError([Problem(mark, ("extends",), f"extends cycle: {chain}")])
        reason = _unreadable(base_path)
        if reason:
            raise SpecError([Problem(mark, ("extends",), f"base spec '{base_name}' not found (looked for {_display(base_path)})"
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

    def stop(self, path: Path, message: str, shown: Path | None = None) -> _Limit:
        return _Limit(Problem(self.loaded.value_mark(path), path if shown is None else shown, message))

    def resolve(self, value: Any, path: Path, active: tuple[str, ...], depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.stop(path, f"{_TOO_DEEP}, references resolved", shown=_outer(path))
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
    except _Limit as limit:
        raise SpecError([*references.problems, limit.problem]) from None
    if references.problems and collect is not None:
        collect.extend(references.problems)
    elif references.problems:
        raise SpecError(references.problems)


def load_spec(path: str | FsPath, overrides: list[str] | None = None,
              reference_problems: list[Problem] | None = None) -> Loaded:
    """File -> extends merged -> overrides applied -> references resolved (`reference_problems`:
    see `resolve_references`' `collect`)."""
    loaded = load_file(path)
    apply_overrides(loaded, list(overrides or []))
    resolve_references(loaded, collect=reference_problems)
    return loaded
