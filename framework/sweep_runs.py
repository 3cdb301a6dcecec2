"""A sweep's runs in the tracking store: its parent run (reopened by a later invocation of the same
sweep), the trials already finished (skipped, and linked into the parent when their run is
elsewhere), and the trials' logs kept as the parent's artifacts."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from framework.plan import Trial
from framework.store import LINK_TAG, RESULT_TAG
from framework.sweep_plan import sweep_hash_of
from framework.trial_launchers import SKIPPED, TrialOutcome


PARENT_TAG = "mlflow.parentRunId"

# A link holds no artifacts: it must not carry RESULT_TAG, or a store lookup by spec hash could
# pick the link (same hash, same start time as the original) and find no result.json.
_NOT_COPIED = (PARENT_TAG, "mlflow.runName", LINK_TAG, RESULT_TAG)


def _finished_hashes(client: Any, experiment_id: str, parent: str | None = None) -> dict[str, str]:
    """spec hash -> id of a FINISHED run with it in the experiment; a child of `parent` (this
    sweep's parent run) wins over a run elsewhere, so that an earlier link is found again."""
    runs = client.search_runs([experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=5000)
    found: dict[str, str] = {}
    for run in sorted(runs, key=lambda r: r.data.tags.get(PARENT_TAG) == parent):  # this parent's last
        if "expspec.spec_hash" in run.data.tags:
            found[run.data.tags["expspec.spec_hash"]] = run.info.run_id
    return found


def open_parent(spec_path: str | Path, overrides: list[str], base: dict[str, Any],
                 hashes: list[str], objective: str | None = None) -> tuple[Any, dict[str, str]]:
    """(the parent run's tracker, spec hash -> id of a FINISHED run in the experiment). The parent
    run of an earlier invocation of the same sweep (same trial hashes) is reopened, not duplicated.
    `objective`: a search sweep's metric, tagged on the parent (`exp ui` shows it first)."""
    from framework.tracking import Tracker, experiment_id

    sweep_hash = sweep_hash_of(hashes)
    tracker = Tracker(base, str(spec_path), sweep_hash, overrides, kind="sweep",
                      extra_tags={"expspec.sweep": "true", "expspec.sweep_hash": sweep_hash,
                                  "expspec.trials": str(len(hashes)),
                                  **({"expspec.sweep_objective": objective} if objective else {})})
    experiment = experiment_id(tracker.client, base["paper"])
    earlier = tracker.client.search_runs(
        [experiment], filter_string=f"tags.`expspec.sweep_hash` = '{sweep_hash}'", max_results=1)
    if earlier:
        tracker.attach(earlier[0].info.run_id)
    else:
        tracker.start(log_params=False)
    return tracker, _finished_hashes(tracker.client, experiment, tracker.run_id)


def skip_finished(trials: list[Trial], hashes: list[str], done: dict[str, str],
                   echo: Any) -> tuple[dict[int, TrialOutcome], list[int]]:
    """(SKIPPED outcomes by trial index, indices of the trials still to run)."""
    outcomes: dict[int, TrialOutcome] = {}
    todo = []
    for i, (trial, h) in enumerate(zip(trials, hashes)):
        if h in done:
            outcomes[i] = TrialOutcome(trial, SKIPPED, run_id=done[h], message=f"finished run {done[h][:8]} has hash {h}")
            echo(f"[skip] {trial.name}: already finished (run {done[h][:8]}, same spec hash)")
        else:
            todo.append(i)
    return outcomes, todo


def link_skipped(client: Any, parent: str, outcomes: dict[int, "TrialOutcome"], echo: Any = print) -> None:
    """Link each skipped trial whose finished run is not a child of `parent` into it (see the
    module docstring), and say so; the outcome then names the linked child run."""
    for outcome in outcomes.values():
        original = client.get_run(outcome.run_id)
        if original.data.tags.get(PARENT_TAG) == parent:
            continue
        linked = link_run(client, original, parent, outcome.trial.name)
        echo(f"[link] {outcome.trial.name}: run {original.info.run_id[:8]} linked into this sweep as run "
             f"{linked[:8]} (a copy of its params, metrics, tags and artifacts but weights)")
        outcome.run_id = linked


def link_run(client: Any, original: Any, parent: str, name: str) -> str:
    """A FINISHED child run of `parent` named `name`, holding `original`'s params, metric
    histories, tags and artifacts other than weights (`*.ckpt`: the tag `expspec.checkpoint`
    names them), tagged `expspec.linked_from`; its id. (A run with no artifact at all breaks the
    Artifacts section of MLflow 3.17's compare view: "Something went wrong".)"""
    from mlflow.entities import Metric, Param

    from framework.interrupts import deferred

    tags = {k: v for k, v in original.data.tags.items() if k not in _NOT_COPIED}
    tags.update({PARENT_TAG: parent, LINK_TAG: original.info.run_id})
    with deferred():  # linked whole: Ctrl-C meanwhile waits, never leaving a half copy RUNNING
        run = client.create_run(original.info.experiment_id, run_name=name, tags=tags,
                                start_time=original.info.start_time)
        run_id = run.info.run_id
        params = [Param(k, v) for k, v in original.data.params.items()]
        for start in range(0, len(params), 100):
            client.log_batch(run_id, params=params[start : start + 100])
        history = [Metric(m.key, m.value, m.timestamp, m.step) for key in original.data.metrics
                   for m in client.get_metric_history(original.info.run_id, key)]
        for start in range(0, len(history), 1000):
            client.log_batch(run_id, metrics=history[start : start + 1000])
        client.set_tag(run_id, "mlflow.note.content", f"linked from run {original.info.run_id} (same spec hash)")
        copy_artifacts(client, original.info.run_id, run_id)
        client.set_terminated(run_id, "FINISHED", end_time=original.info.end_time)
    return run_id


def copy_artifacts(client: Any, source: str, target: str, path: str = "", skip: tuple[str, ...] = (".ckpt",)) -> None:
    """Copy run `source`'s artifacts under `path` to run `target`, leaving out files ending in `skip`."""
    for item in client.list_artifacts(source, path or None):
        if item.is_dir:
            copy_artifacts(client, source, target, item.path, skip)
        elif not item.path.endswith(skip):
            with tempfile.TemporaryDirectory(prefix="expspec-link-") as folder:
                local = client.download_artifacts(source, item.path, folder)
                client.log_artifact(target, local, str(Path(item.path).parent) if "/" in item.path else None)


def upload_trial_logs(client: Any, parent: str, workdir: Path, trials: list[Trial], echo: Any = print) -> None:
    """Each launched trial's output (its log file) as the parent run's artifact
    `trial_logs/<index> <trial name>.log`: what a trial printed, failed ones included, stays
    with the sweep after its temporary folder is removed. A store that refuses the upload is
    reported, not raised: the trials' results are stored already."""
    logs = sorted(workdir.glob("*.log"), key=lambda path: int(path.stem))
    if not logs:
        return
    named = workdir / "trial_logs"
    named.mkdir()
    for log in logs:
        i = int(log.stem)
        log.rename(named / f"{i:03d} {trials[i].name.replace('/', '_')}.log")
    try:
        client.log_artifacts(parent, str(named), "trial_logs")
    except Exception as error:  # noqa: BLE001 (any store error)
        echo(f"the trials' logs were not uploaded to the parent run: {error}")
