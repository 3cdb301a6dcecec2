"""Selecting runs for `exp compare`: targets (an experiment, `sweep:<parent id>`, a run id or a
unique prefix) -> runs, target by target, each target's runs by start time, each run once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

EXIT_NO_RUNS, EXIT_UNKNOWN = 1, 2
PARENT_TAG = "mlflow.parentRunId"
STATUSES = ("FINISHED", "FAILED", "KILLED", "RUNNING", "SCHEDULED", "ALL")
_RUN_ID = re.compile(r"[0-9a-f]{32}")
_RUN_ID_PREFIX = re.compile(r"[0-9a-f]{8,31}")


def did_you_mean(word: str, options: Any) -> str:
    """registry's hint, imported when a message needs it (`exp` builds this command's parser on every
    call, and importing the registry costs tens of milliseconds)."""
    from registry import did_you_mean as hint

    return hint(word, options)


class CompareError(Exception):
    """A target, param or metric that does not exist; `exit_code` is what `exp compare` returns."""

    def __init__(self, message: str, exit_code: int = EXIT_UNKNOWN) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Selection:
    runs: list[Run]
    sweep_parents: list[str] = field(default_factory=list)  # parent run ids of targets that were sweeps


def search_runs(client: MlflowClient, experiment_ids: list[str], filter_string: str = "") -> list[Run]:
    """Every active run matching the filter (MlflowClient pages at most 1000 at a time)."""
    runs: list[Run] = []
    token = None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000, page_token=token)
        runs += page
        token = page.token
        if not token:
            return runs


def _by_start(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_name or "", r.info.run_id))


def _children(client: MlflowClient, parent: Run) -> list[Run]:
    return search_runs(client, [parent.info.experiment_id], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")


def _experiment_names(client: MlflowClient) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = client.search_experiments(max_results=1000, page_token=token)
        names += [e.name for e in page]
        token = page.token
        if not token:
            return names


def find_run(client: MlflowClient, run_id: str) -> Run:
    """A run by its full id or a unique prefix (8+ hex digits, as the table prints)."""
    from mlflow.exceptions import MlflowException

    if _RUN_ID.fullmatch(run_id):
        try:
            return client.get_run(run_id)
        except MlflowException:
            raise CompareError(f"no run with id '{run_id}' in {client.tracking_uri}") from None
    experiments = [e.experiment_id for e in client.search_experiments(max_results=1000)]
    matches = search_runs(client, experiments, f"attributes.run_id LIKE '{run_id}%'") if experiments else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CompareError(f"no run whose id starts with '{run_id}' in {client.tracking_uri}")
    raise CompareError(f"run id prefix '{run_id}' matches {len(matches)} runs; give more digits")


def _unknown_target(client: MlflowClient, target: str) -> CompareError:
    names = _experiment_names(client)
    hint = did_you_mean(target, names)
    if not hint:
        hint = f" Experiments: {', '.join(sorted(names))}." if names else " The store has no experiments."
    return CompareError(f"no experiment or run named '{target}' in {client.tracking_uri}.{hint}")


def resolve_targets(client: MlflowClient, targets: Sequence[str], status: str = "FINISHED") -> Selection:
    """The runs the targets name (see framework.compare), in order, each once. `status` (any
    case; `ALL` for any) filters the runs an experiment or a sweep yields; a run named by its id
    is always listed."""
    status = status.upper()
    keep: Callable[[Run], bool] = (lambda run: True) if status == "ALL" else (lambda run: run.info.status == status)
    selected: list[Run] = []
    parents: list[str] = []
    for target in targets:
        runs, parent = _target_runs(client, target, keep)
        selected += _by_start(runs)
        if parent is not None:
            parents.append(parent)
    seen: set[str] = set()
    unique = [r for r in selected if not (r.info.run_id in seen or seen.add(r.info.run_id))]
    return Selection(unique, parents)


def _target_runs(client: MlflowClient, target: str, keep: Callable[[Run], bool]) -> tuple[list[Run], str | None]:
    """(the runs of one target, the parent run id when the target is a sweep or a parent run)."""
    if target.startswith("sweep:"):
        parent = find_run(client, target.removeprefix("sweep:"))
        return [r for r in _children(client, parent) if keep(r)], parent.info.run_id
    if _RUN_ID_PREFIX.fullmatch(target) or _RUN_ID.fullmatch(target):
        experiment = client.get_experiment_by_name(target)
        if experiment is not None:  # a hex-looking experiment name wins over a run id prefix
            return _experiment_runs(client, experiment.experiment_id, keep), None
        run = find_run(client, target)
        children = _children(client, run)
        if children:
            return [r for r in children if keep(r)], run.info.run_id
        return [run], None
    experiment = client.get_experiment_by_name(target)
    if experiment is None or experiment.lifecycle_stage == "deleted":
        raise _unknown_target(client, target)
    return _experiment_runs(client, experiment.experiment_id, keep), None


def _experiment_runs(client: MlflowClient, experiment_id: str, keep: Any) -> list[Run]:
    """An experiment's runs that pass `keep`, leaving out parent runs (sweeps, staged specs)."""
    runs = search_runs(client, [experiment_id])
    parents = {r.data.tags[PARENT_TAG] for r in runs if PARENT_TAG in r.data.tags}
    return [r for r in runs if r.info.run_id not in parents and keep(r)]


def select_runs(client: MlflowClient, targets: Sequence[str], status: str = "FINISHED") -> list[Run]:
    """The runs the targets name; raises CompareError for an unknown experiment or run."""
    return resolve_targets(client, targets, status).runs
