"""Validation: a loaded spec -> the operative spec (every default filled in), or one SpecError.

Sections are checked by the pydantic types in `framework.spec`; component nodes by the JSON
Schema of the named component (from the committed schema file for `exp validate`, from live
signatures for `exp run`). Every problem is collected before raising, and each is reported with
its file:line:col, its key path, what is wrong and what would be valid.

Weighted terms (`terms:` of weighted_sum, annotated `components.kinds.WeightedLosses`): a mapping
of term name -> loss node, names lower_snake_case. A term node may carry `weight` (a finite number
>= 0, default 1.0), the only place a spec writes a weight; the operative spec has each term as
`{type, weight, ...arguments}`, in the order written (an `extends:` child's new terms come after
its base's). A term whose value is null is removed: that is how a child spec drops a term its base
defined (`terms: {cvm: null}`), and how an override does (`loss.terms.cvm=null`); at least one
term must remain.

Null arguments: an argument written empty (`lr:`) or `null` is the value None, never "use the
default" (delete the key for that). It is kept where the signature accepts None (`Optional`), and
is otherwise an error "expected <what is valid>, got null", component-node arguments included.
Integers: an integer argument is written as an integer; `1e100` (a float) is not one.

Old spellings: when a check fails, `OLD_SPELLINGS` is consulted before the generic message. Each
entry names the check (`terms`: a weighted mapping is not a mapping; `term name`: a term name is
not lower_snake_case; `argument`: a component has no such argument), says when the failure is an
old spelling, and writes the message in the new spelling (the list of terms as the equivalent
mapping, `loss.terms.<name>.weight` for an index, where a weight now goes). A later rename adds
one entry to `OLD_SPELLINGS`.
"""

from __future__ import annotations

import itertools
import json
import math
import pathlib
import re
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, Callable, Protocol

from pydantic import BaseModel, ValidationError

import registry
from framework.errors import Path, Problem, SpecError, format_path
from framework.loader import Loaded, dump_line
from framework.schema import TERM_WEIGHT
from framework.validate_cache import note_exists
from framework.spec import NODE_SECTIONS, Hardware, Spec, Tracking, Trainer

_SECTIONS: dict[str, type[BaseModel]] = {"hardware": Hardware, "trainer": Trainer, "tracking": Tracking}


class Schemas(Protocol):
    def names(self, kind: str) -> list[str]: ...
    def component(self, kind: str, name: str) -> dict[str, Any]: ...


def describe(schema: Any) -> str:
    """Human text for what a JSON Schema accepts: 'a number', "one of 'a', 'b'", ..."""
    if not schema:
        return "any value"
    terms = node_ref(schema)
    if terms and terms[1] == "terms":
        return f"a mapping of term name -> {registry.KINDS[terms[0]].noun} node (each with an optional weight)"
    if "$ref" in schema:
        kind = schema["$ref"].rsplit("node.", 1)[-1]
        return f"a {registry.KINDS[kind].noun} node" if kind in registry.KINDS else "a component node"
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) if not isinstance(v, bool) else str(v).lower() for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(describe(s) for s in schema["anyOf"])
    json_type = schema.get("type")
    if json_type == "array":
        if "prefixItems" in schema:
            return f"a list of {len(schema['prefixItems'])} items"
        items = schema.get("items")
        text = f"a list of ({describe(items)})" if items else "a list"
    else:
        text = {
            "integer": "an integer",
            "number": "a number",
            "string": "a string",
            "boolean": "true or false",
            "null": "null",
            "object": "a mapping",
        }.get(json_type, str(json_type))
    rule = _rule(schema)
    if not rule:
        return text
    if rule.startswith("must have "):
        return f"{text} with {rule.removeprefix('must have ')}"
    return f"{text} {rule.removeprefix('must be ').removeprefix('must ')}"


# JSON Schema bound keyword -> the rule in words (framework.schema.constrained writes them).
_RULES = {
    "minimum": "must be >= {}",
    "exclusiveMinimum": "must be > {}",
    "maximum": "must be <= {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "must have at least {} character(s)",
    "maxLength": "must have at most {} character(s)",
    "minItems": "must have at least {} item(s)",
    "maxItems": "must have at most {} item(s)",
    "minProperties": "must have at least {} key(s)",
    "maxProperties": "must have at most {} key(s)",
}


def _rule(schema: dict[str, Any]) -> str:
    """Every bound of a schema in plain words: 'must be >= 0 and < 1', or '' when it has none.
    (A list of a fixed length, `prefixItems`, already says its length in `describe`.)"""
    if "prefixItems" in schema:
        return ""
    rules = [template.format(_number(schema[key])) for key, template in _RULES.items() if key in schema]
    if not rules:
        return ""
    return rules[0] + "".join(" and " + r.removeprefix("must be ").removeprefix("must have ") for r in rules[1:])


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else str(value)


def _strict_integer(checker: Any, instance: Any) -> bool:
    """An integer is a YAML integer: 64.0 or 1e100 is a number, never silently a size."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _nan_fails(keyword: str) -> Callable[..., Any]:
    """A bound keyword that NaN fails (NaN compares false with everything, so it passes them all)."""
    import jsonschema

    check = jsonschema.Draft202012Validator.VALIDATORS[keyword]

    def nan_fails(validator: Any, bound: Any, instance: Any, schema: dict[str, Any]) -> Any:
        if isinstance(instance, float) and math.isnan(instance):
            yield jsonschema.ValidationError(f"{instance!r} is not within the bounds")
        else:
            yield from check(validator, bound, instance, schema)

    return nan_fails


@cache
def argument_validator_class() -> Any:
    """How component arguments are checked: JSON Schema 2020-12 with the two rules above."""
    import jsonschema

    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        validators={k: _nan_fails(k) for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")},
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
    )


def yaml_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{yaml_type(value)} {text}"


def _hint(value: Any, schema: dict[str, Any]) -> str:
    """YAML typing surprises: a number where a string was meant, and the reverse."""
    accepts = describe(schema)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "a string" in accepts:
        return f" (YAML read it as a number; quote it: '{value}')"
    if isinstance(value, str) and ("a number" in accepts or "an integer" in accepts):
        try:
            float(value)
        except ValueError:
            return ""
        return " (it is quoted, so YAML read a string; remove the quotes)"
    return ""


def _close(word: str, options: list[str]) -> str | None:
    found = registry.close_matches(word, options)
    return found[0] if found else None


def _unknown_key(owner: str, key: str, valid: list[str], what: str = "key") -> str:
    if "." in key.strip("."):  # `loss.terms.cvm.weight: 3`: an override's spelling, written in a file
        parts = key.split(".")
        nested = "".join(f"{part}: {{" for part in parts[:-1]) + f"{parts[-1]}: ..." + "}" * (len(parts) - 1)
        return (f"{owner} has no {what} '{key}': keys in a file are not dotted (a dotted key path is how "
                f"overrides and sweep axes spell it); nest them: {nested}")
    match = _close(key, valid)
    if match:
        return f"{owner} has no {what} '{key}'. Did you mean '{match}'?"
    return f"{owner} has no {what} '{key}'. Valid {what}s: {', '.join(valid) or 'none'}."


def _flow(value: Any) -> str:
    """A value as one line of flow-style YAML, keys in the order written."""
    return dump_line(value)


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
            f"when terms are reordered; write terms: {_flow(named)}")


def _numbered_term(value: Any, where: dict[str, Any]) -> str:
    term = where["term"]
    rest = f".{next(iter(term))}" if isinstance(term, dict) and len(term) == 1 else ""
    names = ", ".join(where["names"]) or "none"
    return (f"terms are named, not numbered: write {format_path(where['path'])}.<name>{rest} "
            f"with <name> one of: {names}")


def _lone_weight(value: Any, where: dict[str, Any]) -> str:
    owner = where["owner"]
    term = _flow({"type": "weighted_sum", "terms": {owner: {"type": owner, "weight": where["given"]}}})
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


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def argument_validator(schema: dict[str, Any]) -> Any:
    """The ArgumentValidator of `schema`, built once per schema object for the whole command (the
    argument schemas live as long as the loaded registry schema; building a jsonschema validator
    costs more than most checks). The entry keeps the schema alive, so its id is never reused."""
    entry = _VALIDATORS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _VALIDATORS[id(schema)] = (schema, argument_validator_class()(schema))
    return entry[1]


def argument_problem(value: Any, schema: dict[str, Any]) -> tuple[Path, str] | None:
    """Where inside `value` (a key path relative to the argument) and why the argument's JSON
    Schema rejects it, or None when it accepts it. The outermost problem is reported; in a union
    (`int | None`) whose member of the value's type rejects it, that member's reason ("must be >= 1")."""
    from jsonschema.exceptions import best_match

    error = best_match(argument_validator(schema).iter_errors(value))
    if error is None:
        return None
    return tuple(error.path), _value_message(error.instance, error)


def _value_message(value: Any, error: Any) -> str:  # a jsonschema.ValidationError
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator in ("type", "enum", "const", "anyOf", "prefixItems"):
        message = f"expected {describe(schema)}, got {_got(value)}"
        if error.validator == "enum" and isinstance(value, str):
            match = _close(value, [str(v) for v in schema.get("enum", [])])
            if match:
                return f"{message}. Did you mean '{match}'?"
        return message + _hint(value, schema)
    if error.validator in _RULES:
        return f"{_rule(schema)}, got {_got(value)}"
    return f"{error.message}"


class _Checker:
    def __init__(self, loaded: Loaded, schemas: Schemas) -> None:
        self.loaded, self.schemas = loaded, schemas
        self.problems: list[Problem] = []

    def problem(self, path: Path, message: str, at_key: bool = False) -> None:
        mark = self.loaded.key_mark(path) if at_key else self.loaded.value_mark(path)
        self.problems.append(Problem(mark, path, message))

    # -- component nodes -------------------------------------------------------------------------

    def node(self, value: Any, kind: str, path: Path) -> Any:
        reg = registry.KINDS[kind]
        if not isinstance(value, dict):
            self.problem(path, f"expected a {reg.noun} node (a mapping with 'type: <{reg.noun}>'), got {_got(value)}")
            return value
        name = value.get("type")
        if name is None:
            self.problem(path, f"a {reg.noun} node needs a 'type' key. Known {registry.plural(reg.noun)}: {', '.join(reg.names())}.", at_key=True)
            return value
        if not isinstance(name, str):
            self.problem((*path, "type"), f"expected a {reg.noun} name, got {_got(name)}")
            return value
        try:
            schema = self.schemas.component(kind, name)
        except registry.UnknownComponent as error:
            self.problem((*path, "type"), error.message)
            return value
        except LookupError as error:
            self.problem((*path, "type"), str(error))
            return value
        properties: dict[str, Any] = schema["properties"]
        arguments = [p for p in properties if p != "type"]
        filled: dict[str, Any] = {"type": name}
        for key in value:
            if key != "type" and key not in properties and not schema.get("additionalProperties"):
                if key in reg.runtime:
                    self.problem((*path, key), f"'{key}' is supplied by the builder at run time; remove it from the spec", at_key=True)
                else:
                    message = old_spelling("argument", key, kind=kind, owner=name, given=value[key])
                    self.problem((*path, key), message or _unknown_key(name, key, arguments, "argument"), at_key=True)
        for key in schema.get("required", []):
            if key not in value:
                self.problem(path, f"{name} is missing required argument '{key}' ({describe(properties[key])})", at_key=True)
        for key, prop in properties.items():
            if key == "type":
                continue
            if key in value:
                filled[key] = self.argument(value[key], prop, (*path, key))
            elif "default" in prop:
                filled[key] = prop["default"]
        for key in value:  # open-ended (**kwargs) constructors keep extra keys as given
            if key not in filled and key in value and schema.get("additionalProperties"):
                filled[key] = value[key]
        return filled

    def argument(self, value: Any, schema: dict[str, Any], path: Path) -> Any:
        nested = node_ref(schema)
        if nested and value is None:  # not given to jsonschema: the node's $ref is not in `schema`
            return self.null_argument(schema, path)
        if nested:
            kind, shape = nested
            if shape == "terms":
                return self.terms(value, kind, _terms_member(schema), path)
            if shape == "list":
                if not isinstance(value, list):
                    self.problem(path, f"expected {describe(schema)}, got {_got(value)}")
                    return value
                return [self.node(item, kind, (*path, i)) for i, item in enumerate(value)]
            return self.node(value, kind, path)
        found = argument_problem(value, schema)
        if found:
            self.problem((*path, *found[0]), found[1] + _default_hint(value, schema))
        return value

    def null_argument(self, schema: dict[str, Any], path: Path) -> None:
        """A null argument (module docstring): kept where the signature accepts None."""
        if not _accepts_null(schema):
            self.problem(path, f"expected {describe(schema)}, got null{_default_hint(None, schema)}")
        return None

    def terms(self, value: Any, kind: str, schema: dict[str, Any], path: Path) -> Any:
        """A weighted mapping: name -> node with an optional weight (see the module docstring)."""
        noun = registry.KINDS[kind].noun
        if not isinstance(value, dict):
            message = old_spelling("terms", value, path=path, pattern=schema["propertyNames"]["pattern"])
            self.problem(path, message or f"expected {describe(schema)}, got {_got(value)}")
            return value
        kept = {name: term for name, term in value.items() if term is not None}  # null removes a term
        if not value:
            self.problem(path, f"expected at least one term (name -> {noun} node), got {_got(value)}")
        elif not kept:  # shown where the last term was removed: the file, a child spec or an override
            mark = self.loaded.value_mark((*path, list(value)[-1]))
            self.problems.append(Problem(mark, path, "every term is removed (null): keep at least one, or "
                                                     f"replace {format_path(path[:-1])} with a node of another type"))
        pattern = schema["propertyNames"]["pattern"]
        typed = [n for n, t in kept.items() if re.match(pattern, n) and isinstance(t, dict) and "type" in t]
        out: dict[str, Any] = {}
        for name, term in kept.items():
            sub = (*path, name)
            if not re.match(pattern, name):
                message = old_spelling("term name", name, path=path, names=typed, term=term)
                self.problem(sub, message or f"term names are lower_snake_case (they are key paths and "
                                             f"metric names), got '{name}'", at_key=True)
                continue
            if isinstance(term, dict) and "type" not in term:
                match = _close(name, typed)
                if match:  # e.g. an override or a child spec that misspelled an existing term
                    self.problem(sub, f"term '{name}' has no 'type' (a new term needs one). "
                                      f"Did you mean '{match}'?", at_key=True)
                    continue
            weight = term.get("weight", TERM_WEIGHT["default"]) if isinstance(term, dict) else None
            if isinstance(term, dict) and "weight" in term:
                self.term_weight(weight, (*sub, "weight"))
            rest = {k: v for k, v in term.items() if k != "weight"} if isinstance(term, dict) else term
            filled = self.node(rest, kind, sub)
            if isinstance(filled, dict) and "type" in filled:
                out[name] = {"type": filled["type"], "weight": weight,
                             **{k: v for k, v in filled.items() if k != "type"}}
        return out

    def term_weight(self, weight: Any, path: Path) -> None:
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            self.problem(path, f"expected a number >= 0, got {_got(weight)}{_hint(weight, TERM_WEIGHT)}")
        elif not (math.isfinite(weight) and weight >= 0):
            self.problem(path, f"must be a finite number >= 0, got {_got(weight)}")

    # -- monitored metrics --------------------------------------------------------------------------

    def monitors(self, nodes: dict[str, Any]) -> None:
        """A callback's `monitor` names a metric key the task logs, when the task declares them
        (`x-logs`; a task that does not is not checked)."""
        task = nodes.get("task")
        try:
            templates = self.schemas.component("tasks", task["type"]).get("x-logs") if isinstance(task, dict) else None
        except (LookupError, registry.UnknownComponent):
            return
        if not templates:
            return
        logged = None
        for i, callback in enumerate(nodes.get("callbacks") or []):
            monitor = callback.get("monitor") if isinstance(callback, dict) else None
            if not isinstance(monitor, str):
                continue
            logged = logged or logged_metrics(templates, nodes)
            if monitor not in logged:
                hint = registry.did_you_mean(monitor, logged)
                self.problem(("callbacks", i, "monitor"),
                             f"{callback['type']} monitors '{monitor}', which this spec never logs.{hint} "
                             f"It logs: {', '.join(logged)}")

    # -- files ------------------------------------------------------------------------------------

    def files(self, sections: dict[str, Any]) -> None:
        """Files the spec names that must exist when it is validated.

        Only `init.checkpoint`: a file from the user's own tree that the run reads first, so a
        missing one is certainly a mistake. It is read as the runner reads it (framework.runner:
        `Path(init.checkpoint)`), so a relative path is relative to the current directory, not to
        the spec's folder. Data-module paths (a dataset root, a CSV file, a token file) are not
        checked here: paper-scale specs name assets that a machine may not have (they are fetched
        or mounted where the run happens, or named by an environment variable), and such a spec
        must still validate; the data module says what is missing and how to get it when the run
        starts, before any training.
        """
        checkpoint = (sections.get("init") or {}).get("checkpoint")
        if checkpoint is not None and not note_exists(checkpoint):
            where = "" if pathlib.Path(checkpoint).is_absolute() else \
                f" (a relative path is read from the current directory, {pathlib.Path.cwd()}, not the spec's folder)"
            self.problem(("init", "checkpoint"), f"file not found: {checkpoint}{where}")

    # -- sections --------------------------------------------------------------------------------

    def sections(self, data: dict[str, Any]) -> Spec | None:
        try:
            return Spec.model_validate(data)
        except ValidationError as exc:
            seen: set[Path] = set()
            for error in exc.errors():
                self.section_error(error, data, seen)
            return None

    def section_error(self, error: Any, data: dict[str, Any], seen: set[Path]) -> None:
        loc = tuple(error["loc"])
        if loc and loc[0] in NODE_SECTIONS:
            if data.get(str(loc[0])) is None and len(loc) == 1:  # missing or null: `node()` skips it
                self.missing_node(str(loc[0]), error["type"] == "missing")
            return  # component nodes are reported by `node()`, with their own messages
        error_type = error["type"]
        if len(loc) > 1 and str(loc[0]) not in _SECTIONS:
            self.nested_error(error, data, seen)  # init, sweep, phases: typed, nested deeper
            return
        owner_cls = _SECTIONS.get(str(loc[0])) if len(loc) > 1 else Spec
        field_path: Path = loc[:2] if owner_cls is not Spec else loc[:1]
        if field_path in seen:
            return
        seen.add(field_path)
        key = field_path[-1]
        if error_type == "extra_forbidden":
            owner = "the spec" if owner_cls is Spec else f"section '{loc[0]}'"
            valid = list(owner_cls.model_fields) if owner_cls else []
            if owner_cls is Spec:
                valid.append("extends")
            self.problem(field_path, _unknown_key(owner, str(key), valid), at_key=True)
        elif error_type == "missing":
            parent = field_path[:-1]
            where = "the spec" if not parent else f"section '{parent[0]}'"
            self.problem(parent, f"{where} is missing required key '{key}'", at_key=True)
        elif error_type == "model_type" or error_type == "model_attributes_type":
            self.problem(field_path, f"expected a mapping of {key} settings, got {_got(error['input'])}")
        else:
            value = _get(data, field_path)
            schema = _field_schema(field_path)
            # A union (`max_steps`: an integer >= 1 or -1) is described whole, whichever member failed first.
            if (error_type.endswith(("_type", "_parsing")) or error_type in ("literal_error", "enum", "union_tag_invalid")
                    or "anyOf" in schema and error_type != "value_error"):
                message = f"expected {describe(schema)}, got {_got(value)}"
                match = _close(value, [str(v) for v in schema.get("enum", [])]) if isinstance(value, str) else None
                message += f". Did you mean '{match}'?" if match else _hint(value, schema)
            else:
                message = f"{_constraint(error_type, error.get('ctx') or {}, error['msg'])}, got {_got(value)}"
                if error_type == "value_error":  # a model validator's own message says it all
                    message = error["msg"].removeprefix("Value error, ")
            self.problem(field_path, message)


    def missing_node(self, field: str, missing: bool) -> None:
        """A required node section (`task`) that is missing, or null."""
        if missing:
            self.problem((), f"the spec is missing required key '{field}'", at_key=True)
        else:
            noun = registry.KINDS[NODE_SECTIONS[field][0]].noun
            self.problem((field,), f"expected a {noun} node (a mapping with 'type: <{noun}>'), got null")

    def nested_error(self, error: Any, data: dict[str, Any], seen: set[Path]) -> None:
        """An error inside a typed section that nests (`init.stage`, `sweep.grid`, `phases.1`):
        reported at the deepest part of its location that the spec has (pydantic adds the names
        of union members and validators to a location; they are not keys)."""
        loc = tuple(error["loc"])
        path: Path = ()
        for part in loc:
            node = _get(data, path)
            if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int):
                path = (*path, part)
            elif error["type"] in ("extra_forbidden", "missing") and isinstance(node, dict) and part == loc[-1]:
                path = (*path, part)
        if path in seen:
            return
        seen.add(path)
        value, key = _get(data, path), path[-1]
        if error["type"] == "extra_forbidden":
            owner = _schema_at(path[:-1])
            valid = [k for m in [owner, *owner.get("anyOf", [])] for k in m.get("properties", {})]
            self.problem(path, _unknown_key(f"'{format_path(path[:-1])}'", str(key), valid), at_key=True)
        elif error["type"] == "missing":
            self.problem(path[:-1], f"'{format_path(path[:-1])}' is missing required key '{key}'", at_key=True)
        elif error["type"] == "value_error":  # a model validator's own message says it all
            self.problem(path, error["msg"].removeprefix("Value error, "))
        else:
            schema = _schema_at(path)
            accepts = describe(schema) if schema else error["msg"].lower()
            message = f"expected {accepts}, got {_got(value)}"
            match = _close(value, [str(v) for v in schema.get("enum", [])]) if isinstance(value, str) else None
            if error["type"] in _CONSTRAINTS:
                message = f"{_constraint(error['type'], error.get('ctx') or {}, error['msg'])}, got {_got(value)}"
            self.problem(path, message + (f". Did you mean '{match}'?" if match else ""))


def _default_hint(value: Any, schema: dict[str, Any]) -> str:
    """For a null where the signature has a default: how to get the default."""
    if value is None and "default" in schema:
        return f" (to use the default {schema['default']!r}, delete the key)"
    return ""


def _accepts_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or any(_accepts_null(m) for m in schema.get("anyOf", []))


_CONSTRAINTS = {
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "string_pattern_mismatch": "must match the pattern {pattern}",
    "string_too_short": "must have at least {min_length} character(s)",
}


def _constraint(error_type: str, ctx: dict[str, Any], fallback: str) -> str:
    template = _CONSTRAINTS.get(error_type)
    return template.format(**ctx) if template else fallback


def _get(data: Any, path: Path) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


_SPEC_SCHEMA: dict[str, Any] | None = None


def _field_schema(path: Path) -> dict[str, Any]:
    global _SPEC_SCHEMA
    if _SPEC_SCHEMA is None:
        _SPEC_SCHEMA = Spec.model_json_schema()
    schema = _SPEC_SCHEMA
    if len(path) == 1:
        return schema["properties"].get(str(path[0]), {})
    section = _SECTIONS[str(path[0])].__name__
    return schema["$defs"][section]["properties"].get(str(path[1]), {})


def _schema_at(path: Path) -> dict[str, Any]:
    """The JSON Schema of the spec at `path` ($refs followed; in a union, the member that has the
    next key), or {} where it cannot be told."""
    global _SPEC_SCHEMA
    if _SPEC_SCHEMA is None:
        _SPEC_SCHEMA = Spec.model_json_schema()
    defs = _SPEC_SCHEMA.get("$defs", {})

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return schema

    schema = _SPEC_SCHEMA
    for part in path:
        schema = resolve(schema)
        members = [resolve(m) for m in schema.get("anyOf", [schema])]
        if isinstance(part, int):
            found = next((m["items"] for m in members if "items" in m), None)
        else:
            found = next((m["properties"][part] for m in members if part in m.get("properties", {})), None)
            found = found or next((m["additionalProperties"] for m in members
                                   if isinstance(m.get("additionalProperties"), dict)), None)
        if found is None:
            return {}
        schema = found
    schema = resolve(schema)
    members = [resolve(m) for m in schema.get("anyOf", [])]
    return {"anyOf": members} if members else schema


def node_ref(schema: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, shape) when the argument holds component node(s): shape "node" (one node), "list"
    (a list of nodes) or "terms" (a weighted mapping of named nodes, `framework.schema.terms_schema`)."""
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/node."):
        return ref.rsplit("node.", 1)[1], "node"
    items = schema.get("items") if schema.get("type") == "array" else None
    if isinstance(items, dict) and items.get("$ref", "").startswith("#/$defs/node."):
        return items["$ref"].rsplit("node.", 1)[1], "list"
    terms = _terms_member(schema)
    if terms:
        extra = terms["additionalProperties"]
        refs = [str(m.get("$ref", "")) for m in extra.get("anyOf", [extra])]
        return next(r for r in refs if r.startswith("#/$defs/term.")).removeprefix("#/$defs/term."), "terms"
    for member in schema.get("anyOf", []):
        found = node_ref(member)
        if found:
            return found
    return None


def _terms_member(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The weighted-mapping schema itself, or the member of an `anyOf` (e.g. Optional) that is one."""
    extra = schema.get("additionalProperties") if schema.get("type") == "object" else None
    if isinstance(extra, dict) and any(str(m.get("$ref", "")).startswith("#/$defs/term.")
                                       for m in extra.get("anyOf", [extra])):
        return schema
    for member in schema.get("anyOf", []):
        found = _terms_member(member)
        if found:
            return found
    return None


class ValidationCache:
    """Component nodes checked before, by kind and value, shared by the specs of one command and
    the trials of a sweep (`framework.plan.SweepChecker`): the key is the node as JSON text in the
    order written, so 1, 1.0 and true differ and the operative node keeps its order (a value JSON
    cannot write is checked every time). Only results without problems are kept (a problem's
    location is the caller's); the results handed out are shared and must not be mutated."""

    LIMIT = 10_000  # entries; past it, results are still correct, just not kept

    def __init__(self) -> None:
        self._by_value: dict[tuple[str, str], Any] = {}

    def node(self, checker: "_Checker", value: Any, kind: str, path: Path) -> Any:
        try:
            key: tuple[str, str] | None = (kind, json.dumps(value))
        except (TypeError, ValueError):
            key = None
        filled = self._by_value.get(key) if key else None
        if filled is None:
            before = len(checker.problems)
            filled = checker.node(value, kind, path)
            if key and len(checker.problems) == before and len(self._by_value) < self.LIMIT:
                self._by_value[key] = filled
        return filled


def validate(loaded: Loaded, schemas: Schemas, cache: ValidationCache | None = None) -> dict[str, Any]:
    """Check a loaded spec; return the operative spec or raise one SpecError with every problem.
    With `cache`, what was checked before is not checked again (see ValidationCache)."""
    checker = _Checker(loaded, schemas)
    check = partial(cache.node, checker) if cache else checker.node
    data = loaded.data
    if not isinstance(data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), "a spec must be a mapping of sections")])
    spec = checker.sections(data)
    dumped = spec.model_dump(mode="json") if spec is not None else None
    if dumped is not None:
        checker.files(dumped)
    nodes: dict[str, Any] = {}
    for field, (kind, many) in NODE_SECTIONS.items():
        value = data.get(field)
        if value is None:
            continue
        if many:
            if not isinstance(value, list):
                checker.problem((field,), f"expected a list of {registry.KINDS[kind].noun} nodes, got {_got(value)}")
                continue
            nodes[field] = [check(item, kind, (field, i)) for i, item in enumerate(value)]
        else:
            nodes[field] = check(value, kind, (field,))
    if data.get("metrics") is None and not checker.problems:  # not written (`metrics: []` is a choice)
        defaults = _default_metrics(schemas, nodes.get("task"))
        nodes.update(metrics=[check({"type": name}, "metrics", ("metrics", i)) for i, name in enumerate(defaults)])
    if not checker.problems:
        checker.monitors(nodes)
    if checker.problems or dumped is None:
        raise SpecError(sorted(checker.problems, key=problem_order))
    return {**dumped, **nodes}


def _default_metrics(schemas: Schemas, task: Any) -> list[str]:
    """The metrics the spec's task reports when the spec lists none (its `x-default-metrics`)."""
    if not isinstance(task, dict) or not isinstance(task.get("type"), str):
        return []
    return list(schemas.component("tasks", task["type"]).get("x-default-metrics") or [])


def logged_metrics(templates: list[str], nodes: dict[str, Any]) -> list[str]:
    """The metric keys a task logs for these nodes, from its `x-logs` templates ({stage},
    {metric}, {term}: see components/tasks/supervised.py)."""
    metrics = [m["type"] for m in nodes.get("metrics") or [] if isinstance(m, dict)]
    terms = (nodes.get("loss") or {}).get("terms")
    values = {"stage": ["train", "val", "test"], "metric": metrics, "term": list(terms) if isinstance(terms, dict) else []}
    keys: list[str] = []
    for template in templates:
        fields = [f for f in values if "{" + f + "}" in template]
        for combination in itertools.product(*(values[f] for f in fields)):
            key = template.format(**dict(zip(fields, combination)))
            if key not in keys:
                keys.append(key)
    return keys


def problem_order(problem: Problem) -> tuple[int, str, int, int]:
    """File problems by file, line, column; override problems after them, in spec order (stable)."""
    mark = problem.mark
    if mark is None or mark.line is None:
        return (1, "", 0, 0)
    return (0, mark.source, mark.line, mark.column or 0)
