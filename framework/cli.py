"""The `exp` command line.

    exp run SPEC [key.path=value ...]     train/evaluate, tracked in MLflow
    exp sweep SPEC [--jobs N] [--fail-fast] [--isolate fork|process]   the sweep's trials under one parent run
    exp sweep SPEC --queue STORAGE_URL    one of many workers on the sweep (framework/queue.py)
    exp sweep SPEC --launcher slurm       the trials as a SLURM job array, through submitit (framework/slurm.py)
    exp resume RUN_ID / exp rerun RUN_ID  continue a killed run / run a stored spec again
    exp reproduce specs/<paper>/ [--full]  run what the paper's claims need, check them
    exp reproduce ... --record | --verify N | --verify-all   recorded results (framework/claims/record.py)
    exp compare TARGET ...                runs of an experiment, a sweep or ids: table, export, plot
    exp ui [--port N]                     the MLflow UI on the runs' store, with links to what to compare
    exp validate PATH ...                 structure and component arguments; never imports torch
    exp show SPEC [key.path=value ...]    the operative spec (extends, overrides, defaults)
    exp list [KIND]                       registered components
    exp explain NAME                      a component's arguments, docstring and source location
    exp explain claims                    the claims file, its check language and every function it can call
    exp schema [--check] [--plugins -o F] write (or check) the committed schema (framework/schema_files.py)

Exit codes: 0 ok, 1 a run or check failed, 2 a spec error or another mistake in what was asked
(an unknown command, option, kind, component name or run id).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from framework.discovery import spec_files
from framework.errors import Problem, SpecError, UsageError

EXIT_FAILED, EXIT_SPEC = 1, 2


def _validate_claims(path: Path) -> None:
    from framework.claims import load_claims

    load_claims(path.parent)


def check_spec(path: str | Path, overrides: list[str], schemas: Any = None, trials: bool = False,
               cache: Any = None) -> Any:
    """Validate a spec (with overrides; every sweep trial too with `trials`, in one pass: see
    `framework.plan.SweepChecker`) against the committed schema: no torch import, so `exp run`
    and `exp sweep` answer a mistake in well under a second instead of after the seconds torch
    takes to import (a component missing from the committed schema is read live, importing it).
    `cache`: a `framework.validate.ValidationCache` shared by the specs of one command, so a node
    that several specs write alike is checked once. Returns the loaded spec; raises SpecError."""
    from framework.loader import load_spec
    from framework.plan import SweepChecker, validate_plan
    from framework.schema import CommittedSchemas

    schemas = schemas or CommittedSchemas(live_fallback=True)
    unresolved: list[Problem] = []  # a broken reference does not hide the spec's other problems
    loaded = load_spec(path, overrides, unresolved)
    if unresolved:
        raise SpecError(_with_other_problems(unresolved, loaded, schemas))
    validate_plan(loaded, schemas, cache)
    if trials and isinstance(loaded.data, dict) and loaded.data.get("sweep") is not None:
        problems = SweepChecker(path, overrides, schemas, cache, loaded).check()  # every trial of a sweep is a spec too
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


# `exp validate` checks this many files or more in shares, one contiguous share per core, all but
# the first in forked children (a folder's files stay together, so each `extends` parent is parsed
# once per share). Measured on 2 cores: 62 files (issue 13's six papers) 0.16-0.19 s of checking
# in one process, 0.12-0.135 s in two; below ~20 files a share, the fork costs what it saves.
PARALLEL_FILES = 40
# Containers made between collections of the youngest generation while files are checked.
GC_THRESHOLD = 10_000


def check_files(files: list[Path], store: Any = None) -> list[SpecError | None]:
    """Each file checked, in order (a claims.yaml as claims, anything else as a spec with every
    sweep trial): its SpecError, or None when it is valid. From PARALLEL_FILES files on, on a
    machine with several cores and `fork`, shares of the list run in forked copies of this
    process (imports already paid), and their problems come back in order. `store`: a
    `framework.validate_cache.ResultCache` each result is written to, with what it read."""
    if not files:
        return []
    _import_checkers()
    from framework.schema import CommittedSchemas

    schemas = CommittedSchemas()  # read once (a 0.7 MB JSON file: ~10 ms), before any fork
    # What is alive now (the imported modules: ~35,000 tracked objects) is left out of garbage
    # collection while the files are checked, here and in forked shares (whose collections would
    # also copy the pages they touch): the checks make many small objects, and each full
    # collection walked the modules' objects again (10-20% of checking 620 files in one process).
    # The youngest generation is also collected less often: the checks make many short-lived
    # containers and few cycles (a caught SpecError with its traceback), and a collection every 700
    # new containers, Python's default, was 2.4% of the instructions of checking 310 files
    # (callgrind). Put back after, for a caller that goes on.
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        return _check_files(files, store, schemas)
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _check_files(files: list[Path], store: Any, schemas: Any) -> list[SpecError | None]:
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                  max(1, len(files) * 2 // PARALLEL_FILES))
    if workers < 2 or not hasattr(os, "fork"):
        done = _check_share(files, store, schemas)
    else:
        size = -(-len(files) // workers)
        done = _forked_shares([files[i:i + size] for i in range(0, len(files), size)], store, schemas)
    return [None if problems is None else SpecError(problems) for problems in done]


def _forked_shares(shares: list[list[Path]], store: Any, schemas: Any) -> list[list[Problem] | None]:
    """`_check_share` of every share, the first in this process and each other in a child forked
    from it (imports paid), which sends its result back through a pipe. A bare fork, not a process
    pool: starting one (its queues, threads and imports) cost 40-60 ms, a tenth of checking 62 files.
    A child that fails or dies is an error that says so, never a result silently missing."""
    import pickle

    children = []
    for share in shares[1:]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: nothing of the parent's (buffered output, exit handlers) runs here
            os.close(read)
            code = 0
            try:
                payload = pickle.dumps(("done", _check_share(share, store, schemas)))
            except BaseException:  # noqa: BLE001  (sent to the parent, which raises it)
                import traceback

                payload, code = pickle.dumps(("failed", traceback.format_exc())), 1
            with os.fdopen(write, "wb") as out:
                out.write(payload)
            os._exit(code)
        os.close(write)
        children.append((pid, read))
    try:
        done = _check_share(shares[0], store, schemas)
    finally:
        results = [_child_result(pid, read) for pid, read in children]
    for kind, result in results:
        if kind != "done":
            raise RuntimeError(f"checking spec files in a forked process failed:\n{result}")
        done += result
    return done


def _child_result(pid: int, read: int) -> tuple[str, Any]:
    import pickle

    with os.fdopen(read, "rb") as pipe:
        payload = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        return "failed", f"the process ended without a result ({_status_text(status)})"
    return pickle.loads(payload)


def _status_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


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


def _check_share(files: list[Path], store: Any, schemas: Any) -> list[list[Problem] | None]:
    """The problems of each file (None for a valid one): plain data, to cross a process boundary.
    With a `store` (a ResultCache) each result is stored with the files its check read, unless it
    read a component's live signature (then it depends on code; framework/validate_cache.py).
    `schemas`: the CommittedSchemas every file of the share is checked against."""
    from framework import validate_cache
    from framework.validate import ValidationCache

    cache = ValidationCache()
    out: list[list[Problem] | None] = []
    for path in files:
        if store is not None:  # what each check reads matters only to a result that is kept
            validate_cache.start_recording()
        try:
            if path.name == "claims.yaml":
                _validate_claims(path)
            else:
                check_spec(path, [], schemas, trials=True, cache=cache)
            out.append(None)
        except SpecError as error:
            out.append(list(error.problems))
        if store is None:
            continue
        reads = validate_cache.stop_recording()
        if not schemas.live_used:
            problems = out[-1] or []
            store.put(path, reads, str(SpecError(problems)) if problems else None, [p.to_json() for p in problems])
    return out


def _validate_results(files: list[Path], use_cache: bool) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Each file's (error text or None, problems as `--format json` writes them): stored results
    whose inputs did not change (framework/validate_cache.py), the rest checked (`check_files`)
    and stored."""
    from framework.validate_cache import ResultCache

    store = ResultCache() if use_cache else None
    stored = [store.get(path) if store else None for path in files]
    checked = iter(check_files([path for path, hit in zip(files, stored) if hit is None], store))
    results = []
    for hit in stored:
        if hit is None:
            error = next(checked)
            hit = {"text": None if error is None else str(error),
                   "problems": [] if error is None else [p.to_json() for p in error.problems]}
        results.append((hit["text"], hit["problems"]))
    return results


def cmd_validate(args: argparse.Namespace) -> int:
    files = spec_files(args.paths)
    if not files:
        print(f"error: no spec files found in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_SPEC
    failed, report = 0, []
    as_json = args.format == "json"
    use_cache = not args.no_cache and os.environ.get("EXPSPEC_VALIDATE_CACHE", "1") != "0"
    for path, (text, problems) in zip(files, _validate_results(files, use_cache)):
        if text is not None:
            failed += 1
            if not as_json:
                print(text, file=sys.stderr)
        if as_json:
            report.append({"file": str(path), "valid": text is None, "problems": problems})
        elif text is None and not args.quiet:
            print(f"ok  {path}")
    if as_json:
        import json

        print(json.dumps({"valid": len(files) - failed, "total": len(files), "files": report}, indent=1))
    else:
        print(f"{len(files) - failed} of {len(files)} spec(s) valid", file=sys.stderr if failed else sys.stdout)
    return EXIT_SPEC if failed else 0


def cmd_show(args: argparse.Namespace) -> int:
    from framework.loader import load_spec
    from framework.plan import expand_sweep, validate_plan
    from framework.schema import CommittedSchemas

    loaded = load_spec(args.spec, args.overrides)
    units = validate_plan(loaded, CommittedSchemas())
    for i, unit in enumerate(units):
        if i:
            print("---")
        stage = f", stage '{unit.stage}'" if unit.stage else ""
        if args.sources:  # where each value comes from (framework/provenance.py)
            from framework.provenance import sources_table

            print(f"# operative spec of {args.spec}{stage}: each value and where it comes from")
            print("\n".join(sources_table(unit.loaded, unit.operative)))
            continue
        print(f"# operative spec of {args.spec}{stage}")
        print(yaml.safe_dump(unit.operative, sort_keys=False, default_flow_style=None, width=100), end="")
    trials = expand_sweep(loaded)
    search = (loaded.data.get("sweep") or {}).get("optuna") if isinstance(loaded.data, dict) else None
    if trials and isinstance(search, dict):  # drawn as they run: only the two ends were validated
        print(f"# sweep: an optuna search of {search.get('trials')} trial(s), drawn as they run; the ends of its "
              "ranges: " + "; ".join(t.name for t in trials))
    elif trials:
        print(f"# sweep: {len(trials)} trial(s): " + "; ".join(t.name for t in trials))
    return 0


def _print_result(result: Any) -> None:
    print(f"run {result.run_id} finished ({result.operative.get('paper', '')} / {result.operative.get('name', '')})")
    for key in sorted(result.metrics):
        print(f"  {key:40s} {result.metrics[key]:.4f}")
    target = os.environ.get("EXPSPEC_RESULT_FILE")
    if target:  # `exp sweep` reads each trial's result from here
        import json

        Path(target).write_text(json.dumps(result.to_json()))
    elif result.run_id:
        print(where_results_are(result))


def where_results_are(result: Any) -> str:
    """Every place a finished run's results landed, and the command that shows them."""
    from framework.runner import cache_dir, runs_dir
    from framework.tracking import client, tracking_uri

    uri = tracking_uri((result.operative.get("tracking") or {}).get("uri"))
    run = client(uri).get_run(result.run_id)
    lines = ["results:",
             f"  MLflow store      {uri}  (experiment {result.operative.get('paper', '')}, run {result.run_id})",
             f"  artifacts         {run.info.artifact_uri}  (resolved_spec.yaml)",
             f"  Lightning files   {runs_dir() / run.info.experiment_id / result.run_id}  (resume.ckpt)",
             f"  local cache       {cache_dir() / result.spec_hash}  (final weights, result.json)"]
    store = "" if uri == tracking_uri(None) else f" --tracking-uri {uri}"
    lines.append(f"look at it: exp ui{store}   (prints links to this experiment's runs table and compare view)")
    return "\n".join(lines)


def _base_only(spec: str, loaded: Any) -> None:
    """`exp run` on a spec with a `sweep:` runs the spec as written, not its trials: say so (not
    in a trial that `exp sweep` runs as `exp run SPEC <trial's overrides>`, a child run)."""
    trial = os.environ.get("EXPSPEC_PARENT_RUN_ID")
    if not trial and isinstance(loaded.data, dict) and loaded.data.get("sweep") is not None:
        print(f"note: {spec} has a sweep; exp run runs its base spec only (the values written, no trial). "
              f"To run the trials: exp sweep {spec}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    _base_only(args.spec, check_spec(args.spec, args.overrides))  # before torch is imported
    from framework.runner import run

    _print_result(run(args.spec, args.overrides))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    check_spec(args.spec, args.overrides)  # before torch is imported; run_sweep checks every trial first
    if args.launcher != "process":
        from framework.slurm import executor_options, submit_sweep

        submit_sweep(args.spec, args.overrides, args.launcher, executor_options(args.slurm or []))
        return 0
    if args.queue:
        from framework.queue import Worker

        report = Worker(args.spec, args.overrides, args.queue, jobs=args.jobs, lease=args.lease,
                        max_failures=args.max_failures, isolate=args.isolate).run()
        return EXIT_FAILED if report.stopped_early or any(o.status not in ("FINISHED", "SKIPPED")
                                                          for o in report.outcomes) else 0
    from framework.sweep import run_sweep

    result = run_sweep(args.spec, args.overrides, jobs=args.jobs, fail_fast=args.fail_fast, isolate=args.isolate)
    return EXIT_FAILED if result.failed else 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from framework.claims import reproduce
    from framework.claims.record import RecordMismatch

    try:
        outcomes = reproduce(args.folder, fresh=args.fresh, write_readme=args.write_readme, jobs=args.jobs,
                             full=args.full, isolate=args.isolate, record=args.record, verify=args.verify,
                             verify_all=args.verify_all, sample_seed=args.sample_seed)
    except RecordMismatch as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    # a claim that failed, or a run that did not finish (its claims read inconclusive), exits 1
    return EXIT_FAILED if any(o.failed or o.failed_runs for o in outcomes) else 0


def cmd_resume(args: argparse.Namespace) -> int:
    from framework.runner import resume

    _print_result(resume(args.run_id, args.tracking_uri))
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    from framework.runner import rerun

    _print_result(rerun(args.run_id, args.tracking_uri))
    return 0


def _kind(name: str) -> str:
    """The kind (its key in registry.KINDS, e.g. `models`) named by its plural or singular name."""
    import registry

    for kind, reg in registry.KINDS.items():
        if name in (kind, reg.noun):
            return kind
    hint = registry.did_you_mean(name, registry.KINDS, otherwise=f" Kinds: {', '.join(registry.KINDS)}.")
    print(f"error: unknown kind '{name}'.{hint}", file=sys.stderr)
    raise SystemExit(EXIT_SPEC)  # a wrong name is a mistake in what was asked, as in `exp explain`


def cmd_list(args: argparse.Namespace) -> int:
    import registry

    kinds = [_kind(args.kind)] if args.kind else list(registry.KINDS)
    if args.format == "json":
        import json

        print(json.dumps([{"kind": kind, "noun": registry.KINDS[kind].noun, "contract": registry.KINDS[kind].contract,
                           "components": [{"name": name, "target": registry.KINDS[kind].target(name),
                                           "origin": registry.KINDS[kind].origin_of(name)}
                                          for name in registry.KINDS[kind].names()]}
                          for kind in kinds], indent=1))
        return 0
    for kind in kinds:
        reg = registry.KINDS[kind]
        print(f"{kind}:  ({reg.contract})" if args.kind and reg.contract else f"{kind}:")
        for name in reg.names():
            print(f"  {name:28s} {reg.target(name):62s} from {reg.origin_of(name)}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """Arguments, defaults, docstring and file:line of a component, read from the committed schema
    and the source file: no component is imported (a plugin's entry missing from the committed
    schema is read from its live signature instead, which imports it)."""
    import registry
    from framework.schema import CommittedSchemas, LiveSchemas
    from framework.sources import locate

    if args.name == "claims":  # the claims file and its check language
        from framework.claims.expressions import language

        print(language())
        return 0
    prefix, _, name = args.name.rpartition(".") if "." in args.name else ("", "", args.name)
    kinds = [_kind(prefix)] if prefix else [k for k, r in registry.KINDS.items() if name in r]
    if prefix and name not in registry.KINDS[kinds[0]]:
        reg = registry.KINDS[kinds[0]]
        hint = registry.did_you_mean(name, reg.names(), otherwise=f" Known {registry.plural(reg.noun)}: {', '.join(reg.names())}.")
        print(f"error: unknown {reg.noun} '{name}'.{hint}", file=sys.stderr)
        return EXIT_SPEC
    if not kinds:
        every = sorted({n for r in registry.KINDS.values() for n in r.names()})
        hint = registry.did_you_mean(name, every, otherwise=" See `exp list`.")
        print(f"error: no component named '{name}'.{hint}", file=sys.stderr)
        return EXIT_SPEC
    committed = CommittedSchemas()
    for kind in kinds:
        reg = registry.KINDS[kind]
        source = locate(reg.target(name))
        where = f"{source.file}:{source.line}" if source else "<unknown>"
        print(f"{reg.noun} '{name}'  ->  {reg.target(name)}  ({where}; from {reg.origin_of(name)})")
        if reg.runtime:
            print(f"  supplied at run time: {', '.join(reg.runtime)}")
        schema = None
        if reg.in_specs:
            schema = committed.defs.get(f"{kind}.{name}") or LiveSchemas().component(kind, name)
            _print_arguments(schema, _descriptions(committed, kind, name))
        doc = source.doc if source and source.doc else (schema or {}).get("description", "")
        print("\n" + "\n".join(f"  {line}" for line in _shown_doc(reg.target(name), doc).splitlines()))
        for base, names in (schema or {}).get("x-inherited", {}).items():  # taken through **kwargs
            base_source = locate(base)
            print(f"\n  {', '.join(names)}: from {base} (**kwargs)")
            print("\n".join(f"  {line}" for line in _shown_doc(base, base_source.doc if base_source else "").splitlines()))
        print()
    return 0


def _shown_doc(target: str, doc: str) -> str:
    """What `exp explain` shows of a docstring: ours without its `Args:` section (each argument
    is described in the list above); a third party's summary only (torch's and Lightning's run to
    pages of maths and notes), with where to read the rest."""
    from framework.sources import summary, without_arguments

    if target.startswith("components."):
        return without_arguments(doc)
    return f"{summary(doc)}\n(the full docstring: the source file above)" if doc else ""


def _descriptions(committed: Any, kind: str, name: str) -> dict[str, str]:
    """argument -> its description, from the editor's view of the committed schema (a plugin's
    component, missing there, from its live docstrings)."""
    from framework.schema import argument_descriptions

    editor = committed.defs.get(f"editor.{kind}.{name}")
    if editor is None:
        return argument_descriptions(kind, name)
    return {k: p["description"] for k, p in editor["properties"].items() if k != "type" and p.get("description")}


def _print_arguments(schema: dict, descriptions: dict[str, str]) -> None:
    import textwrap

    from framework.wording import describe

    print("  arguments:")
    for key, prop in schema["properties"].items():
        if key == "type":
            continue
        need = "required" if key in schema["required"] else f"default {prop.get('default', '<none>')!r}"
        print(f"    {key:26s} {describe({k: v for k, v in prop.items() if k != 'default'})}  [{need}]")
        if descriptions.get(key):
            print(textwrap.fill(descriptions[key], width=100, initial_indent=" " * 6, subsequent_indent=" " * 6))
    if schema.get("additionalProperties"):
        print("    (any other keyword: a **kwargs that cannot be followed into a base class)")


def cmd_schema(args: argparse.Namespace) -> int:
    """Without -o: the committed files (framework/spec.schema.json and one fragment per family
    package: framework/schema_files.py). With -o: the whole schema in one file, for an editor
    (with --plugins, installed plugins' components too)."""
    import json

    from framework import schema_files
    from framework.schema import build_schema

    if args.plugins and not args.output:
        raise UsageError("--plugins writes one whole file for an editor: name it with -o FILE "
                         "(the committed files hold this repository's components only)")
    whole = build_schema(plugins=args.plugins)
    if args.output:
        path, text = Path(args.output), json.dumps(whole, indent=1) + "\n"
        stale = [] if path.is_file() and path.read_text() == text else [path]
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
            return 0
    elif args.check:
        stale = schema_files.stale(whole)
    else:
        written = schema_files.write(whole)
        print(f"wrote {written[0]} and {len(written) - 1} fragment(s)")
        return 0
    for path in stale:
        print(f"{path} is stale: run `exp schema` and commit it", file=sys.stderr)
    if stale:
        return EXIT_FAILED
    print("the committed schema is up to date")
    return 0


def _add_isolate(command: argparse.ArgumentParser) -> None:
    command.add_argument("--isolate", choices=("fork", "process"), default="fork",
                         help="how each sweep trial's process starts: forked from a warm server that imported "
                              "torch, Lightning and MLflow once (fork, default), or a fresh interpreter (process)")


def _add_queue(command: argparse.ArgumentParser) -> None:
    """`exp sweep --queue`: many workers on one sweep (framework/queue.py)."""
    command.add_argument("--queue", metavar="STORAGE_URL",
                         help="work on the sweep with every process given the same spec and queue: an Optuna "
                              "storage, postgresql://... or journal:PATH (needs the `distributed` extra)")
    command.add_argument("--lease", type=float, default=60.0, metavar="SECONDS",
                         help="with --queue: a running trial with no heartbeat for this long is re-issued")
    command.add_argument("--max-failures", type=int, default=3, metavar="N",
                         help="with --queue: this worker stops after N failed trials in a row")
    command.add_argument("--launcher", choices=("process", "slurm", "submitit-local"), default="process",
                         help="process: trials run here (default); slurm: submit them as a SLURM job array through "
                              "submitit and exit (framework/slurm.py); submitit-local: the same on this machine")
    command.add_argument("--slurm", action="append", metavar="KEY=VALUE",
                         help="a submitit executor parameter, e.g. slurm_partition=gpu, timeout_min=240 (repeatable)")


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `exp` parser. Given the arguments, with only the sub-commands added with the one they
    name: each parser argparse builds asks gettext for its words, which looks for translation files
    on disk every time (~150 file checks per full build, 66 M instructions: 5% of a cold
    `exp validate`). A command-line that names no known command first (`exp --help`, a typo) gets
    every sub-command, so help and "invalid choice" list them all."""
    p = argparse.ArgumentParser(prog="exp", description="Declarative, spec-driven experiments.")
    p.add_argument("--traceback", action="store_true", help="show full tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True)
    named = _named_command(argv or [])
    for add in [COMMANDS[named]] if named in COMMANDS else dict.fromkeys(COMMANDS.values()):
        add(sub)
    return p


def _named_command(argv: list[str]) -> str | None:
    """The first word of `argv` when only `exp`'s own flag comes before it (else None)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg != "--traceback":
            return None
    return None


def _add_run_commands(sub: Any) -> None:
    """run, sweep, reproduce, resume, rerun: the commands that train and track."""
    r = sub.add_parser("run", help="run a spec (fit, then test), tracked in MLflow")
    r.add_argument("spec")
    r.add_argument("overrides", nargs="*", metavar="key.path=value")
    r.set_defaults(func=cmd_run)
    sw = sub.add_parser("sweep", help="run the spec's sweep: trials as child runs of one parent run")
    sw.add_argument("spec")
    sw.add_argument("overrides", nargs="*", metavar="key.path=value")
    sw.add_argument("--jobs", type=int, default=1, help="trials at a time; cores are split between them")
    sw.add_argument("--fail-fast", action="store_true", help="stop at the first failed trial")
    _add_isolate(sw)
    _add_queue(sw)
    sw.set_defaults(func=cmd_sweep)
    rp = sub.add_parser("reproduce", help="run what a paper's claims need and check them")
    rp.add_argument("folder", help="a paper folder with claims.yaml, e.g. specs/cvm_fairness/")
    rp.add_argument("--fresh", action="store_true", help="run everything again (default: reuse finished runs)")
    rp.add_argument("--write-readme", action="store_true", help="rewrite the claims table in the README")
    rp.add_argument("--full", action="store_true",
                    help="also the runs and claims marked `tier: full` (default: the default tier only)")
    rp.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="parallel sweep trials")
    rp.add_argument("--record", action="store_true",
                    help="run the default tier from scratch and write the folder's results.lock.yaml")
    rp.add_argument("--verify", type=int, default=0, metavar="N",
                    help="re-run N recorded runs from scratch (the headline's first) and require the recorded numbers")
    rp.add_argument("--verify-all", action="store_true", help="re-run every recorded run (before recording, a release)")
    rp.add_argument("--sample-seed", default=None, help="the seed of --verify's sample (default: the git commit)")
    _add_isolate(rp)
    rp.set_defaults(func=cmd_reproduce)
    for name, func, text in (("resume", cmd_resume, "continue a killed run from its last checkpoint"),
                             ("rerun", cmd_rerun, "run again from a run's stored resolved spec")):
        c = sub.add_parser(name, help=text)
        c.add_argument("run_id")
        c.add_argument("--tracking-uri", help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
        c.set_defaults(func=func)


def _add_spec_commands(sub: Any) -> None:
    """validate, show, list, explain, schema: the commands that read specs and components, no torch."""
    v = sub.add_parser("validate", help="check specs without importing torch")
    v.add_argument("paths", nargs="+")
    v.add_argument("-q", "--quiet", action="store_true", help="print only problems and the summary")
    v.add_argument("--format", choices=("text", "json"), default="text",
                   help="json: one document on stdout, every file with its problems (file, line, column, "
                        "key path, message, suggestions), for editors, CI and agents")
    v.add_argument("--no-cache", action="store_true",
                   help="check every file, not reusing results whose inputs did not change (the cache "
                        "lives in $EXPSPEC_CACHE_DIR/validate, default .expspec/cache/validate; "
                        "EXPSPEC_VALIDATE_CACHE=0 turns it off too)")
    v.set_defaults(func=cmd_validate)
    s = sub.add_parser("show", help="print the operative spec")
    s.add_argument("spec")
    s.add_argument("overrides", nargs="*", metavar="key.path=value")
    s.add_argument("--sources", action="store_true",
                   help="each value with where it comes from: file:line (the spec or a file it extends), "
                        "an override, a sweep axis, or a default")
    s.set_defaults(func=cmd_show)
    ls = sub.add_parser("list", help="list registered components")
    ls.add_argument("kind", nargs="?")
    ls.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: kinds with their contract, each component with its target and origin")
    ls.set_defaults(func=cmd_list)
    e = sub.add_parser("explain", help="show a component's arguments, docstring and file:line")
    e.add_argument("name", help="NAME or KIND.NAME")
    e.set_defaults(func=cmd_explain)
    sc = sub.add_parser("schema", help="write the JSON Schema of specs")
    sc.add_argument("--check", action="store_true", help="exit 1 if the written schema is stale")
    sc.add_argument("-o", "--output")
    sc.add_argument("--plugins", action="store_true",
                    help="include installed plugins' components (for an editor; never in the committed file)")
    sc.set_defaults(func=cmd_schema)


def _add_compare(sub: Any) -> None:
    from framework.compare import add_parser

    add_parser(sub)


def _add_ui(sub: Any) -> None:
    from framework.ui import add_parser

    add_parser(sub)


# The sub-commands, in the order `exp --help` lists them, by the function that adds them.
COMMANDS: dict[str, Any] = {
    **dict.fromkeys(("run", "sweep", "reproduce", "resume", "rerun"), _add_run_commands),
    "compare": _add_compare,
    "ui": _add_ui,
    **dict.fromkeys(("validate", "show", "list", "explain", "schema"), _add_spec_commands),
}


def _describe_error(error: BaseException) -> str:
    lines = [f"error: {type(error).__name__}: {error}"]
    lines += [f"  {note}" for note in getattr(error, "__notes__", [])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return _main(parser(argv).parse_args(argv))


def _main(args: argparse.Namespace) -> int:
    if args.command in ("run", "resume", "rerun", "sweep", "reproduce"):
        from framework import interrupts

        # SIGTERM (a scheduler, `exp sweep --fail-fast`) ends a run like Ctrl-C: marked KILLED.
        interrupts.install()
    show_traceback = args.traceback or os.environ.get("EXPSPEC_TRACEBACK") == "1"
    try:
        return args.func(args)
    except SpecError as error:
        print(error, file=sys.stderr)
        return EXIT_SPEC
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_SPEC
    except KeyboardInterrupt:
        print("interrupted; the run is marked KILLED", file=sys.stderr)
        return 130
    except Exception as error:
        if show_traceback:
            raise
        print(_describe_error(error), file=sys.stderr)
        if args.command == "run":
            print("  (the MLflow run, if one was started, is marked FAILED with error.txt; "
                  "--traceback shows the full traceback)", file=sys.stderr)
        return EXIT_FAILED


# Commands that leave nothing to the interpreter's shut-down (no MLflow, no threads, every file
# they write closed): `entry` ends them at once after flushing what they printed.
QUICK_EXIT = frozenset({"validate"})
# The exit status of a command that returned, for `_end_after_exit_handlers` (set by `entry`).
_RETURNED: list[int] = []


def entry() -> None:
    """The `exp` console script: `main`, then exit without the interpreter's tear-down.

    Once a command has finished (MLflow run ended, files written, output flushed), the tear-down
    of the object graph torch and Lightning leave behind took ~2 s of every `exp run`: its garbage
    collections (`gc.freeze()` moves every object out of their reach: 2.0 s -> 0.2-0.45 s), then
    clearing every module and freeing what they hold (0.33-0.43 s of the 0.45 s left on
    2026-12-02). A QUICK_EXIT command skips all of it: its output is flushed, logging's handlers
    are, and the process ends. Any other command exits as usual, the interpreter waiting for its
    threads and running every exit handler (MLflow's, multiprocessing's for its children, the
    finalizers that remove temporary folders, logging's), and then ends in the handler registered
    here first, so run last: `_end_after_exit_handlers`. Nothing is lost by skipping the rest:
    nothing of ours relies on a finalizer, and no file of ours is left open (each is written in a
    `with` block). Only here, not in `main`, so that tests calling `main` in-process keep
    collecting normally; a command that raised exits the usual way, as Python reports it.

    `EXPSPEC_QUICK_EXIT=0` turns both off, for a tool that registered an exit handler before
    `entry` ran (coverage.py saves its data in one), which the quick exit would skip."""
    import atexit
    import gc

    if os.environ.get("EXPSPEC_QUICK_EXIT", "1") == "0":
        sys.exit(_main(parser(sys.argv[1:]).parse_args()))
    atexit.register(_end_after_exit_handlers)  # importing framework.cli registers none: this one runs last
    args = parser(sys.argv[1:]).parse_args()
    code = _main(args)
    if args.command in QUICK_EXIT:
        _exit_now(code)
    gc.freeze()
    _RETURNED.append(int(code or 0))
    sys.exit(code)


def _end_after_exit_handlers() -> None:
    """The last exit handler: once a command returned, end the process with its status instead of
    tearing the interpreter down (`entry`)."""
    if _RETURNED:
        _exit_now(_RETURNED[0])


def _exit_now(code: int) -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `exp validate ... | head`: the reader has gone, as a normal exit would
        code = code or 120
    if "logging" in sys.modules:
        import logging

        logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    entry()
