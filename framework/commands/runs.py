"""`exp run`, `exp sweep`, `exp reproduce`, `exp resume`, `exp rerun`: the commands that train and
track. Each checks what it was given against the committed schema before torch is imported."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from framework.commands import EXIT_FAILED
from framework.invocation import RunContext, use
from framework.spec_check import check_spec


def _print_result(result: Any, context: RunContext) -> None:
    print(f"run {result.run_id} finished ({result.operative.get('paper', '')} / {result.operative.get('name', '')})")
    for key in sorted(result.metrics):
        print(f"  {key:40s} {result.metrics[key]:.4f}")
    target = context.result_file
    if target:  # `exp sweep` reads each trial's result from here
        import json

        Path(target).write_text(json.dumps(result.to_json()))
    elif result.run_id:
        print(where_results_are(result))


def where_results_are(result: Any) -> str:
    """Every place a finished run's results landed, and the command that shows them."""
    from framework.result_cache import cache_dir
    from framework.runner import runs_dir
    from framework.tracking import client, tracking_uri

    uri = tracking_uri((result.operative.get("tracking") or {}).get("uri"))
    run = client(uri).get_run(result.run_id)
    lines = ["results:",
             f"  MLflow store      {uri}  (experiment {result.operative.get('paper', '')}, run {result.run_id})",
             f"  artifacts         {run.info.artifact_uri}  (resolved_spec.yaml)",
             f"  Lightning files   {runs_dir() / run.info.experiment_id / result.run_id}  (resume.ckpt)",
             f"  result cache      {cache_dir() / result.spec_hash}  (final weights, result.json)"]
    store = "" if uri == tracking_uri(None) else f" --tracking-uri {uri}"
    lines.append(f"look at it: exp ui{store}   (prints links to this experiment's runs table and compare view)")
    return "\n".join(lines)


def note_base_only(spec: str, loaded: Any, context: RunContext) -> None:
    """`exp run` on a spec with a `sweep:` runs the spec as written, not its trials: say so (not
    in a trial that `exp sweep` runs as `exp run SPEC <trial's overrides>`, a child run)."""
    if not context.parent_run_id and isinstance(loaded.data, dict) and loaded.data.get("sweep") is not None:
        print(f"note: {spec} has a sweep; exp run runs its base spec only (the values written, no trial). "
              f"To run the trials: exp sweep {spec}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    context = RunContext.from_environ()  # the user's settings, and a sweep's hand-offs to its trial
    note_base_only(args.spec, check_spec(args.spec, args.overrides), context)  # before torch is imported
    from framework.runner import run

    with use(context):
        _print_result(run(args.spec, args.overrides, context), context)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    check_spec(args.spec, args.overrides)  # before torch is imported; run_sweep checks every trial first
    if args.launcher != "process":
        from framework.slurm import executor_options, submit_sweep

        submit_sweep(args.spec, args.overrides, args.launcher, executor_options(args.slurm or []))
        return 0
    if args.queue:
        from framework.queue_worker import Worker

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
    from framework.resume import rerun_context, resume

    with use(rerun_context(args.tracking_uri, RunContext.from_environ())) as context:
        _print_result(resume(args.run_id, args.tracking_uri, context=context), context)
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    from framework.resume import rerun, rerun_context

    with use(rerun_context(args.tracking_uri, RunContext.from_environ())) as context:
        _print_result(rerun(args.run_id, args.tracking_uri, context), context)
    return 0
