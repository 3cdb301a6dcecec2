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

Old spellings are explained by `framework.old_spellings`; messages are worded by `framework.wording`.
"""

from __future__ import annotations

import itertools
import json
import math
import pathlib
import re
from functools import partial
from typing import Any, Protocol

from pydantic import ValidationError

import registry
from framework.arguments import argument_problem
from framework.errors import Path, Problem, SpecError, format_path
from framework.marked_yaml import Loaded
from framework.old_spellings import old_spelling
from framework.schema import TERM_WEIGHT
from framework.schema_paths import node_ref, terms_member
from framework.section_errors import section_error
from framework.spec import NODE_SECTIONS, Spec
from framework.validate_cache import note_exists
from framework.wording import accepts_null, close_match, default_hint, describe, got, typing_hint, unknown_key


class Schemas(Protocol):
    def names(self, kind: str) -> list[str]: ...
    def component(self, kind: str, name: str) -> dict[str, Any]: ...


class _Checker:
    """The problems of one loaded spec, collected while its sections and nodes are checked."""

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
            self.problem(path, f"expected a {reg.noun} node (a mapping with 'type: <{reg.noun}>'), got {got(value)}")
            return value
        name = value.get("type")
        if name is None:
            self.problem(path, f"a {reg.noun} node needs a 'type' key. Known {registry.plural(reg.noun)}: {', '.join(reg.names())}.", at_key=True)
            return value
        if not isinstance(name, str):
            self.problem((*path, "type"), f"expected a {reg.noun} name, got {got(name)}")
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
                    self.problem((*path, key), message or unknown_key(name, key, arguments, "argument"), at_key=True)
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
                return self.terms(value, kind, terms_member(schema), path)
            if shape == "list":
                if not isinstance(value, list):
                    self.problem(path, f"expected {describe(schema)}, got {got(value)}")
                    return value
                return [self.node(item, kind, (*path, i)) for i, item in enumerate(value)]
            return self.node(value, kind, path)
        found = argument_problem(value, schema)
        if found:
            self.problem((*path, *found[0]), found[1] + default_hint(value, schema))
        return value

    def null_argument(self, schema: dict[str, Any], path: Path) -> None:
        """A null argument (module docstring): kept where the signature accepts None."""
        if not accepts_null(schema):
            self.problem(path, f"expected {describe(schema)}, got null{default_hint(None, schema)}")
        return None

    def terms(self, value: Any, kind: str, schema: dict[str, Any], path: Path) -> Any:
        """A weighted mapping: name -> node with an optional weight (see the module docstring)."""
        noun = registry.KINDS[kind].noun
        if not isinstance(value, dict):
            message = old_spelling("terms", value, path=path, pattern=schema["propertyNames"]["pattern"])
            self.problem(path, message or f"expected {describe(schema)}, got {got(value)}")
            return value
        kept = {name: term for name, term in value.items() if term is not None}  # null removes a term
        if not value:
            self.problem(path, f"expected at least one term (name -> {noun} node), got {got(value)}")
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
                match = close_match(name, typed)
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
            self.problem(path, f"expected a number >= 0, got {got(weight)}{typing_hint(weight, TERM_WEIGHT)}")
        elif not (math.isfinite(weight) and weight >= 0):
            self.problem(path, f"must be a finite number >= 0, got {got(weight)}")

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
                section_error(self.problem, error, data, seen)
            return None


class CheckMemo:
    """What the specs of one command and the trials of a sweep (`framework.plan.SweepChecker`)
    share, checked once, each by value: the key is JSON text in the order written, so 1, 1.0 and
    true differ and the operative spec keeps its order (a value JSON cannot write is checked every
    time).

    - Component nodes, by kind and value; and first by the identity of the very object checked
      before (a node a sweep trial shares with its sweep's base), which skips writing its JSON key.
    - The typed sections (pydantic), by the value of every section that is not a component node
      and the shape of those that are (mapping, list of mappings or null: all pydantic checks of
      a node).

    Only results without problems are kept (a problem's location is the caller's); the results
    handed out are shared and must not be mutated. In memory, for one process: not the validate
    cache (framework/validate_cache.py, on disk)."""

    LIMIT = 10_000  # entries; past it, results are still correct, just not kept

    def __init__(self) -> None:
        self._by_value: dict[tuple[str, str], Any] = {}
        self._by_identity: dict[tuple[str, int], tuple[Any, Any]] = {}  # (kind, id) -> (value kept alive, node)
        self._sections: dict[str, dict[str, Any]] = {}

    def node(self, checker: "_Checker", value: Any, kind: str, path: Path) -> Any:
        same = self._by_identity.get((kind, id(value)))
        if same is not None and same[0] is value:
            return same[1]
        try:
            key: tuple[str, str] | None = (kind, json.dumps(value))
        except (TypeError, ValueError):
            key = None
        filled = self._by_value.get(key) if key else None
        if filled is None:
            before = len(checker.problems)
            filled = checker.node(value, kind, path)
            if len(checker.problems) > before:
                return filled
            if key and len(self._by_value) < self.LIMIT:
                self._by_value[key] = filled
        if len(self._by_identity) < self.LIMIT:
            self._by_identity[(kind, id(value))] = (value, filled)
        return filled

    def sections(self, checker: "_Checker", data: dict[str, Any]) -> dict[str, Any] | None:
        """The typed sections dumped (as `Spec.model_dump`), or None after reporting problems."""
        try:
            key: str | None = json.dumps([[k, _node_shape(v) if k in NODE_SECTIONS else v] for k, v in data.items()])
        except (TypeError, ValueError):
            key = None
        dumped = self._sections.get(key) if key else None
        if dumped is None:
            spec = checker.sections(data)
            if spec is None:
                return None
            dumped = spec.model_dump(mode="json")
            if key and len(self._sections) < self.LIMIT:
                self._sections[key] = dumped
        return dumped


def _node_shape(value: Any) -> Any:
    """What pydantic checks of a component-node section: mapping, list of mappings, null."""
    return [type(item).__name__ for item in value] if isinstance(value, list) else type(value).__name__


def validate(loaded: Loaded, schemas: Schemas, memo: CheckMemo | None = None) -> dict[str, Any]:
    """Check a loaded spec; return the operative spec or raise one SpecError with every problem.
    With `memo`, what was checked before is not checked again (see CheckMemo)."""
    checker = _Checker(loaded, schemas)
    check = partial(memo.node, checker) if memo else checker.node
    data = loaded.data
    if not isinstance(data, dict):
        raise SpecError([Problem(loaded.value_mark(()), (), "a spec must be a mapping of sections")])
    if memo:
        dumped = memo.sections(checker, data)
    else:
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
                checker.problem((field,), f"expected a list of {registry.KINDS[kind].noun} nodes, got {got(value)}")
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
    """The metric keys a task logs for these nodes, from its `x-logs` templates ({split},
    {metric}, {term}: see components/tasks/supervised.py; {stage} is the old spelling of {split})."""
    metrics = [m["type"] for m in nodes.get("metrics") or [] if isinstance(m, dict)]
    terms = (nodes.get("loss") or {}).get("terms")
    splits = ["train", "val", "test"]
    values = {"split": splits, "stage": splits, "metric": metrics, "term": list(terms) if isinstance(terms, dict) else []}
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
