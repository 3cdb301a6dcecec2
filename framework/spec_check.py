"""Checking specs without importing torch: one spec with its overrides (every sweep trial too, in
one pass), or many files, as `exp validate` checks them (in shares on several cores:
framework/forked_shares.py)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from framework.errors import Problem, SpecError
from framework.forked_shares import in_shares


def validate_claims(path: Path, files: Any = None) -> None:
    from framework.claims import load_claims

    load_claims(path.parent, files)


def check_spec(path: str | Path, overrides: list[str], schemas: Any = None, trials: bool = False,
               memo: Any = None, files: Any = None) -> Any:
    """Validate a spec (with overrides; every sweep trial too with `trials`, in one pass: see
    `framework.plan.SweepChecker`) against the committed schema: no torch import, so `exp run`
    and `exp sweep` answer a mistake in well under a second instead of after the seconds torch
    takes to import (a component missing from the committed schema is read live, importing it).
    `memo`: a `framework.validate.CheckMemo` shared by the specs of one command, so a node
    that several specs write alike is checked once; `files`: a `framework.loader.SpecFiles` of
    the command, so that a file several checks load is read once. Returns the loaded spec; raises
    SpecError."""
    from framework.loader import load_spec
    from framework.plan import SweepChecker, validate_plan
    from framework.schema import CommittedSchemas

    schemas = schemas or CommittedSchemas(live_fallback=True)
    unresolved: list[Problem] = []  # a broken reference does not hide the spec's other problems
    loaded = load_spec(path, overrides, unresolved, files)
    if unresolved:
        raise SpecError(_with_other_problems(unresolved, loaded, schemas))
    validate_plan(loaded, schemas, memo)
    if trials and isinstance(loaded.data, dict) and loaded.data.get("sweep") is not None:
        problems = SweepChecker(path, overrides, schemas, memo, loaded, files).check()  # every trial of a sweep is a spec too
        if problems:
            raise SpecError(problems)
    return loaded


def _with_other_problems(unresolved: list[Problem], loaded: Any, schemas: Any) -> list[Problem]:
    """The reference problems and every other problem of the spec, except those at or under a
    key whose reference is unresolved (its value is still the `${...}` text), in file order."""
    from framework.plan import validate_plan
    from framework.validate import problem_order

    try:
        validate_plan(loaded, schemas)
        others: list[Problem] = []
    except SpecError as error:
        others = error.problems
    broken = [p.path for p in unresolved]
    others = [p for p in others if not any(p.path[:len(b)] == b for b in broken)]
    return sorted([*unresolved, *others], key=problem_order)


def check_files(files: list[Path], disk_cache: Any = None) -> list[SpecError | None]:
    """Each file checked, in order (a claims.yaml as claims, anything else as a spec with every
    sweep trial): its SpecError, or None when it is valid, checked in shares on a machine with
    several cores (framework/forked_shares.py). `disk_cache`: the validate cache
    (`framework.validate_cache.ValidateCache`) each result is written to, with what it read."""
    if not files:
        return []
    _import_checkers()
    from framework.schema import CommittedSchemas

    schemas = CommittedSchemas()  # the committed schema's files read once, before any fork
    with fewer_collections():
        done = in_shares(lambda share: check_share(share, disk_cache, schemas), files)
    return [None if problems is None else SpecError(problems) for problems in done]


GC_THRESHOLD = 10_000  # new containers between collections of the youngest generation (`fewer_collections`)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Garbage collection while many files are checked: what is alive before (the imported modules,
    ~35,000 objects) is frozen out of it, and the youngest generation is collected every
    GC_THRESHOLD new containers instead of 700 (the checks make many short-lived containers and few
    cycles). Put back after, for a caller that goes on. 10 copies of specs/ (2,930 files), CPU
    seconds, median of 9 runs, two sessions: 4.70 and 4.52 s with both, 5.05 and 5.16 s without
    (-7% and -12%); either alone saves about half of that."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _import_checkers() -> None:
    """Import what checks files (once, before any fork), with pydantic's plugins off meanwhile.

    Defining a pydantic model first loads pydantic's plugins, which reads the entry points of every
    installed distribution (40-60 ms of a ~0.45 s `exp validate`, measured with ~200 installed).
    The models checked here are expspec's own spec sections, which no validation-observing plugin
    is for, so `PYDANTIC_DISABLE_PLUGINS` (pydantic's documented switch) is set while they are
    defined, unless the user set it, and put back after: plugins load as usual for models defined
    later in this process (`exp run` never comes here)."""
    if "framework.claims" in sys.modules and "framework.plan" in sys.modules:
        return
    before = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        import framework.claims  # noqa: F401
        import framework.plan  # noqa: F401
    finally:
        if before is None:
            os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)


def check_share(files: list[Path], disk_cache: Any, schemas: Any) -> list[list[Problem] | None]:
    """The problems of each file (None for a valid one): plain data, to cross a process boundary.
    With a `disk_cache` (a ValidateCache) each result is written to it with the files its check read, unless it
    read a component's live signature (then it depends on code; framework/validate_cache.py).
    `schemas`: the CommittedSchemas every file of the share is checked against."""
    from framework import validate_cache
    from framework.loader import SpecFiles
    from framework.validate import CheckMemo

    memo, read = CheckMemo(), SpecFiles()  # shared by the share's checks: each file read once
    out: list[list[Problem] | None] = []
    for path in files:
        if disk_cache is not None:  # what each check reads matters only to a result that is kept
            validate_cache.start_recording()
        try:
            if path.name == "claims.yaml":
                validate_claims(path, read)
            else:
                check_spec(path, [], schemas, trials=True, memo=memo, files=read)
            out.append(None)
        except SpecError as error:
            out.append(list(error.problems))
        if disk_cache is None:
            continue
        reads = validate_cache.stop_recording()
        if not schemas.live_used:
            problems = out[-1] or []
            disk_cache.put(path, reads, str(SpecError(problems)) if problems else None, [p.to_json() for p in problems])
    return out
