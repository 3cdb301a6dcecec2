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
import os
import sys
from typing import Any

from framework.commands import EXIT_FAILED, EXIT_SPEC
from framework.commands.components import cmd_explain, cmd_list, cmd_schema
from framework.commands.runs import cmd_reproduce, cmd_rerun, cmd_resume, cmd_run, cmd_sweep
from framework.commands.specs import cmd_show, cmd_validate
from framework.errors import SpecError, UsageError


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


def parser() -> argparse.ArgumentParser:
    """The `exp` parser: every sub-command, in the order `exp --help` lists them."""
    from framework.compare import add_parser as add_compare
    from framework.ui import add_parser as add_ui

    p = argparse.ArgumentParser(prog="exp", description="Declarative, spec-driven experiments.")
    p.add_argument("--traceback", action="store_true", help="show full tracebacks of errors")
    sub = p.add_subparsers(dest="command", required=True)
    _add_run_commands(sub)
    add_compare(sub)
    add_ui(sub)
    _add_spec_commands(sub)
    return p


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
                   help="check every file, not reusing results whose inputs did not change (the validate cache "
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


def _describe_error(error: BaseException) -> str:
    lines = [f"error: {type(error).__name__}: {error}"]
    lines += [f"  {note}" for note in getattr(error, "__notes__", [])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return _main(parser().parse_args(argv))


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

    It first pins torch's CPU kernels (`pin_cpu_numerics`) and turns MLflow's telemetry off
    (`no_mlflow_telemetry`), for this process and every process it starts. `EXPSPEC_QUICK_EXIT=0` turns both exits off, for a tool that registered an exit handler before
    `entry` ran (coverage.py saves its data in one), which the quick exit would skip."""
    import atexit
    import gc

    from framework.invocation import no_mlflow_telemetry, pin_cpu_numerics

    pin_cpu_numerics()  # before torch first computes (framework/invocation.py)
    no_mlflow_telemetry()  # before mlflow is imported
    if os.environ.get("EXPSPEC_QUICK_EXIT", "1") == "0":
        sys.exit(_main(parser().parse_args()))
    atexit.register(_end_after_exit_handlers)  # importing framework.cli registers none: this one runs last
    args = parser().parse_args()
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
