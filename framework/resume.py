"""Runs again from what the tracking store holds: `exp resume RUN_ID` continues a killed run
from its resume checkpoint into the same MLflow run; `exp rerun RUN_ID` runs its stored resolved
spec again as a new run. Both run through `framework.runner.run_unit`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from framework.errors import UsageError
from framework.invocation import RunContext, current, use
from framework.result_cache import RunResult
from framework.runner import last_checkpoint, prepare, resume_file, run_unit, runs_dir, unit_hashes


def stored_spec(run_id: str, uri: str | None = None) -> tuple[Any, Path]:
    """(the MLflow run, its resolved_spec.yaml downloaded to a temporary folder)."""
    import tempfile

    from framework.tracking import client

    mlflow_client = client(uri)
    try:
        run_info = mlflow_client.get_run(run_id)
    except Exception as error:
        raise UsageError(f"no run '{run_id}' in {mlflow_client.tracking_uri}: {error}") from None
    path = mlflow_client.download_artifacts(run_id, "resolved_spec.yaml", tempfile.mkdtemp(prefix="expspec-"))
    return run_info, Path(path)


def init_override(run_info: Any) -> list[str]:
    """A stage run's resolved spec names its init stage; outside its spec, use the weights it loaded."""
    checkpoint = run_info.data.tags.get("expspec.init_checkpoint")
    return [f"init={{checkpoint: '{checkpoint}'}}"] if checkpoint else ["init=null"]


def resume(run_id: str, uri: str | None = None, from_start: bool = False, context: RunContext | None = None) -> RunResult:
    """Continue a killed run from its resume checkpoint, into the same MLflow run. Training
    continues exactly where the checkpoint was written (weights, optimizer, loop position, the
    train loader's place in the epoch, random generators), so the run ends with the metrics of an
    uninterrupted one. The metrics the killed process logged after that checkpoint are logged
    again by the resumed one with the same values; the logger drops them (see
    `Tracker.logged_steps`), so the MLflow history holds each step once, as an uninterrupted run's.
    With `from_start` (a requeued SLURM job stopped before its first checkpoint), a run that left
    no checkpoint trains again from its start, into the same run. `uri` (default: the context's
    store) is the store of everything the run does (`rerun_context`)."""
    with use(rerun_context(uri, context)):
        return _resume(run_id, uri, from_start)


def rerun_context(uri: str | None, context: RunContext | None) -> RunContext:
    """The context a resumed or rerun run works in: the command's (default: this process's),
    with the store `uri` when given; active only while it runs (nothing is left in os.environ)."""
    context = context or current()
    return context.but(tracking_uri=uri) if uri else context


def _resume(run_id: str, uri: str | None, from_start: bool) -> RunResult:
    run_info, spec_file = stored_spec(run_id, uri)
    checkpoint = last_checkpoint(run_id) or fetch_checkpoint(run_info, uri)
    if checkpoint is None and not from_start:
        raise FileNotFoundError(
            f"run {run_id} left no resume checkpoint under {runs_dir()}/*/{run_id}/checkpoints/ "
            f"nor in the store (it stopped before its first one was written, or checkpointing was off); "
            f"start it again with `exp rerun {run_id}`"
        )
    overrides = (["init=null"] if checkpoint else init_override(run_info)) \
        if run_info.data.tags.get("expspec.init_checkpoint") else []
    units = prepare(spec_file, overrides)
    tags = run_info.data.tags
    return run_unit(units[0], tags.get("expspec.spec_hash", ""), overrides, parent_run_id=tags.get("mlflow.parentRunId"),
                    resume_run_id=run_id, resume_checkpoint=str(checkpoint) if checkpoint else None)


def fetch_checkpoint(run_info: Any, uri: str | None) -> Path | None:
    """The run's resume checkpoint from the tracking store (uploaded by a run on a tracking
    server), downloaded to where `last_checkpoint` finds it; None when the store has none."""
    from framework.store import fetch_resume_checkpoint
    from framework.tracking import client

    target = runs_dir() / run_info.info.experiment_id / run_info.info.run_id / "checkpoints" / resume_file()
    return fetch_resume_checkpoint(client(uri), run_info, target)


def rerun(run_id: str, uri: str | None = None, context: RunContext | None = None) -> RunResult:
    """Run again from the run's stored resolved spec, as a new run tagged with the original
    (in the store `uri`, default the context's)."""
    import yaml

    with use(rerun_context(uri, context)) as active:
        run_info, spec_file = stored_spec(run_id, uri)
        overrides = init_override(run_info) if (yaml.safe_load(spec_file.read_text()) or {}).get("init") else []
        units = prepare(spec_file, overrides)
        return run_unit(units[0], unit_hashes(units, spec_file)[0], overrides, context=active.but(rerun_of=run_id))
