"""YAML text -> plain data with the file, line and column of every key and value (`Loaded`),
read with a safe loader within limits on the work a text may ask for; and the one-line dump.

Each breach of a limit is a SpecError at the file, line and column where it happens, never a
crash or a hang (the file's size and encoding: `framework.file_text`; references:
`framework.references`):

- Text: a control character other than tab, newline and carriage return is an error at its line
  and column. A text that is empty, or only whitespace and comments, reads as None.
- Tags: plain YAML types only. A scalar may be tagged `!!str`, `!!int`, `!!float`, `!!bool` or
  `!!null` (and its text must read as that type: `!!int 'abc'` is an error), a list `!!seq`, a
  mapping `!!map`; every other tag (`!!binary`, `!!timestamp`, `!!set`, `!!python/...`, local
  `!tags`) is rejected. No merge keys (`<<`; use `extends:`), no duplicate keys, keys are strings.
  `1e-3` reads as a float (YAML 1.1 would read a string).
- Numbers: an integer lies in [-2**63, 2**64 - 1] (64 bits; a longer one is not converted at
  all); a float literal that overflows a 64-bit float (`1e400`) is an error (`.inf` is infinite).
- Nesting: at most `MAX_DEPTH` levels of lists and mappings, in a file, an override and the
  spec after references are resolved. A value that contains itself (`a: &a [*a]`) is an error.
- Aliases (`*name`): at most `MAX_ALIAS_VALUES` values (lists, mappings and scalars) per file or
  override may come from expanding aliases, so an alias bomb ("billion laughs") stops early.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from framework.errors import Mark, Path, Problem, SpecError
from framework.yaml_syntax import syntax_words

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

# The limits of the module docstring (`framework.file_text` and `framework.references` hold theirs).
MAX_DEPTH = 64
MAX_ALIAS_VALUES = 10_000
INT_RANGE = (-(1 << 63), (1 << 64) - 1)
# Characters YAML does not accept in a stream (all but YAML 1.1's "printable": tab, LF, CR,
# x20-x7E, x85, xA0-xD7FF, xE000-xFFFD, x10000-x10FFFF); a lone surrogate is a byte of an override
# that was not UTF-8. Written as what is refused: the complement class took ~9 ms to compile, a
# fiftieth of `exp validate` (tests/framework/test_loader.py tries every code point).
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


class LimitExceeded(Exception):
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

    def stop(self, node: yaml.Node, path: Path, message: str, shown: Path | None = None) -> LimitExceeded:
        """The limit's problem at the nearest key written on `path` (an aliased node's own mark is
        its anchor's), reported at key path `shown` (default: `path`)."""
        mark = next((self.out.key_marks[path[:end]] for end in range(len(path), 0, -1)
                     if path[:end] in self.out.key_marks), _mark(node, self.out.source))
        return LimitExceeded(Problem(mark, path if shown is None else shown, message))

    def build(self, node: yaml.Node, path: Path, via_alias: bool = False) -> Any:
        collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
        if collection:  # a scalar alias is one value: only a collection can be a bomb, or contain itself
            if len(path) >= MAX_DEPTH:  # its items would be one level deeper than MAX_DEPTH
                raise self.stop(node, (*path, 0), TOO_DEEP, shown=outer_path(path))
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
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels of lists and mappings (a spec nests at most {MAX_DEPTH})"


def outer_path(path: Path) -> Path:
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
        return Problem(where, (), TOO_DEEP)
    return Problem(where, (), f"invalid YAML: {syntax_words(error, text)}")


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
                    return Problem(Mark(source, mark.line + 1, mark.column + 1), (), TOO_DEEP)
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
        except LimitExceeded as limit:
            raise SpecError([*problems, limit.problem]) from None
    if problems:
        raise SpecError(problems)
    return out


def copy_tree(value: Any) -> Any:
    """A copy of loaded data: every mapping and list new, scalars shared (the safe loader makes no
    mutable scalar). Several times faster than `copy.deepcopy` on spec-sized data."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value
