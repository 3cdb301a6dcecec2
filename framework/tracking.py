"""MLflow tracking of a run: experiment = paper; params = the flattened operative spec; tags = spec
path, spec hash, git commit and dirty flag, package versions; artifact = resolved_spec.yaml;
metrics through Lightning's MLflow logger with `split/name` keys (`train/loss`, `test/accuracy`).

The runner owns the run's lifecycle: it creates the run before building anything and always ends
it, FINISHED, FAILED (the error text logged as a tag and as error.txt) or KILLED (Ctrl-C), so no
run is ever left RUNNING by an exception. A process killed outright (SIGKILL, the out-of-memory
killer) cannot say so: every run records its host and process id, and the next run started in
the same experiment on that host marks such an orphan KILLED (`reap_orphans`); `exp resume` still
continues it from its last checkpoint.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from framework.invocation import RunContext
from framework.marked_yaml import dump_line
from framework.run_context import SystemMetrics, context_tags, log_context, package_version

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from framework.mlflow_logger import RunLogger

# This module imports neither Lightning nor MLflow at import time: `exp compare` and `exp reproduce`
# resolve the store through it before (or without) training anything.
DEFAULT_URI = "sqlite:///mlflow.db"
PACKAGES = ("expspec", "torch", "lightning", "torchmetrics", "mlflow", "pydantic", "numpy")
_MAX_PARAM = 6000  # MLflow's limit on a param value's length


def tracking_uri(uri: str | None = None) -> str:
    """The MLflow store to use: `uri` (a spec's `tracking.uri`, a `--tracking-uri` argument) when
    given, else the store of the command's context ($MLFLOW_TRACKING_URI when set and non-empty,
    or `exp rerun --tracking-uri`: framework/invocation.py), else `sqlite:///mlflow.db` in the
    working directory. Every command resolves its store here."""
    from framework.invocation import current

    return uri or current().tracking_uri or DEFAULT_URI


def client(uri: str | None = None) -> MlflowClient:
    """An MLflow client of the store `tracking_uri(uri)` names, the store created and migrated.
    Each of its calls runs whole: Ctrl-C or SIGTERM waits for it to end (framework/interrupts.py)."""
    import logging

    from mlflow.tracking import MlflowClient

    from framework.interrupts import WholeCalls

    # MLflow's INFO lines (creating and migrating a store's tables) would bury `exp`'s own; its
    # warnings still show. Set after the import, which configures MLflow's loggers.
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    resolved = tracking_uri(uri)
    prepare_store(resolved)
    return WholeCalls(MlflowClient(tracking_uri=resolved))  # type: ignore[return-value]  (its calls, whole)


_PREPARED: set[str] = set()


def prepare_store(uri: str) -> None:
    """Create and migrate a sqlite store once, under an exclusive lock on `<file>.lock`: MLflow
    creates its tables and runs its alembic migrations on first use, and processes that start at
    once on a store that does not exist yet race in them (`table _alembic_tmp_latest_metrics
    already exists`), leaving it half-migrated. With the lock one process migrates and the others
    find it ready. A server URI needs nothing: the server owns its database."""
    if uri in _PREPARED or not uri.startswith("sqlite:///"):
        return
    import fcntl

    from mlflow.tracking import MlflowClient

    path = Path(uri.removeprefix("sqlite:///"))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)  # creates, migrates
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _PREPARED.add(uri)


def experiment_id(mlflow_client: MlflowClient, name: str) -> str:
    """The id of experiment `name`: restored if it was deleted, created if it does not exist (safe
    when another process creates it at the same moment)."""
    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is not None:
        if experiment.lifecycle_stage == "deleted":
            mlflow_client.restore_experiment(experiment.experiment_id)
        return experiment.experiment_id
    try:
        return mlflow_client.create_experiment(name)
    except Exception:  # another process created it between the two calls
        experiment = mlflow_client.get_experiment_by_name(name)
        if experiment is None:
            raise
        return experiment.experiment_id


def process_tags() -> dict[str, str]:
    """Where this run lives: host and process id (for `Tracker.reap_orphans`), and, when torch is
    imported, the intra-op thread count the run set and the vector instructions its CPU kernels
    use (`expspec.cpu_capability`: AVX2 under framework.invocation.pin_cpu_numerics; two runs' CPU numbers are
    comparable to the last bit only when it is the same)."""
    tags = {"expspec.host": socket.gethostname(), "expspec.pid": str(os.getpid())}
    torch = sys.modules.get("torch")
    if torch is not None:
        tags["expspec.torch_threads"] = str(torch.get_num_threads())
        tags["expspec.cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return tags


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """`{"model": {"hidden": [64]}}` -> `{"model.hidden": "[64]"}`; lists of nodes are indexed."""
    out: dict[str, str] = {}
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for i, sub in enumerate(value):
            out.update(flatten(sub, f"{prefix}.{i}"))
    else:
        out[prefix] = dump_line(value)
    return out


# Not what a run did, so never a compared param: `name` and `description` are tags
# (`expspec.name`, `mlflow.note.content`); a `sweep:` section is in resolved_spec.yaml, and each
# trial's own values are its params. The spec hash leaves them out too (framework/spec.py).
BOOKKEEPING = ("name", "description", "sweep")
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_OVERRIDES = 40  # characters of a run name's overrides part, at most


def run_params(operative: dict[str, Any]) -> dict[str, str]:
    """The params of a run: the flattened operative spec, less `BOOKKEEPING`."""
    return flatten({k: v for k, v in operative.items() if k not in BOOKKEEPING})


def run_name_for(name: str, overrides: list[str]) -> str:
    """`cvm-tiny` and overrides `optimizer.lr=0.001 seed=1` -> `cvm-tiny lr=0.001 seed=1`: each
    override by the last part of its key path, cut to RUN_NAME_OVERRIDES characters; overrides of
    `BOOKKEEPING` keys (`name=...`) are left out (the name says them already)."""
    pairs = [o.partition("=") for o in overrides]
    short = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, _, v in pairs if k.strip() not in BOOKKEEPING)
    if len(short) > RUN_NAME_OVERRIDES:
        short = short[: RUN_NAME_OVERRIDES - 1] + "…"
    return f"{name} {short}" if short else name


def readme_title(spec_path: str | Path) -> str:
    """The first line of the README.md beside a spec (or in a folder above it, up to three
    levels), without its `#` marks; empty when there is none."""
    folder = Path(spec_path).resolve().parent
    for candidate in (folder, *list(folder.parents)[:3]):
        readme = candidate / "README.md"
        if readme.is_file():
            lines = readme.read_text(encoding="utf-8", errors="replace").splitlines()
            return lines[0].lstrip("#").strip() if lines else ""
    return ""


# The MLflow UI reads an experiment's description from this tag (the "About" box of the experiment).
DESCRIPTION_TAG = "mlflow.note.content"


def describe_experiment(mlflow_client: MlflowClient, experiment: str, spec_path: str) -> None:
    """Give a paper's experiment its description (the first line of its README) and tags
    (`expspec.paper`, `mlflow.experimentKind` = custom_model_development: a training experiment),
    once: tags already set (by us or by the user) are left alone."""
    tags = mlflow_client.get_experiment(experiment).tags
    wanted = {"mlflow.experimentKind": "custom_model_development", "expspec.paper": "true"}
    title = readme_title(spec_path)
    if title:
        wanted[DESCRIPTION_TAG] = title
    from mlflow.exceptions import MlflowException

    for key, value in wanted.items():
        if key not in tags:
            try:
                mlflow_client.set_experiment_tag(experiment, key, value)
            except MlflowException:  # another run of a new experiment set it at the same moment
                pass


def git_state(cwd: Path | None = None) -> tuple[str, bool] | None:
    """(commit, dirty) of the repository holding `cwd`, or None outside a git checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                capture_output=True, text=True, timeout=10)
        return commit.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict[str, str]:
    """The versions of PACKAGES, from the listing `environment/packages.txt` is made of (read
    once per process: framework/run_context.py)."""
    return {name: package_version(name) for name in PACKAGES}


class Tracker:
    """One MLflow run of one operative spec (or the parent run of stages or of a sweep).

    Args:
        parent_run_id: Nest this run under another (`mlflow.parentRunId`): stages under their
            spec's run. Default: the context's (a sweep trial under the sweep's run).
        kind: A word the run name adds after the spec's name (`sweep` for a sweep's parent run).
        context: What the command that starts this run was told (framework/invocation.py): its
            parent run, name, launcher's tags and the run it reruns. Default: none of them.
    """

    def __init__(
        self,
        operative: dict[str, Any],
        spec_path: str,
        spec_hash: str,
        overrides: list[str],
        parent_run_id: str | None = None,
        extra_tags: dict[str, str] | None = None,
        kind: str = "",
        context: RunContext | None = None,
    ) -> None:
        self.operative, self.spec_path, self.spec_hash, self.overrides = operative, spec_path, spec_hash, overrides
        self.kind = kind
        self.context = context or RunContext()
        self.parent_run_id = parent_run_id or self.context.parent_run_id
        self.extra_tags = extra_tags or {}
        self.uri = tracking_uri(operative["tracking"]["uri"])
        self.client = client(self.uri)
        self.run_id: str | None = None
        self.already_logged: dict[tuple[str, int], int] = {}
        self.system_metrics: SystemMetrics | None = None

    def monitor_system(self, resumed: bool = False) -> None:
        """Sample the machine's load into the run until `finish` (framework/run_context.py)."""
        self.system_metrics = SystemMetrics(self.client, self.run_id, self.uri, resumed)

    def attach(self, run_id: str) -> str:
        """Continue an existing run (resume): it is RUNNING again, in this process, until `finish`."""
        self.run_id = run_id
        try:  # RUNNING again from the first call: an error or Ctrl-C from there on ends it again
            self.client.update_run(run_id, status="RUNNING")
            self.client.set_tag(run_id, "expspec.resumed", "true")
            for key, value in process_tags().items():
                self.client.set_tag(run_id, key, value)
            self.already_logged = self.logged_steps()
        except BaseException as error:
            self.finish(error)
            raise
        return run_id

    def logged_steps(self) -> dict[tuple[str, int], int]:
        """How many values the run holds for each (metric, step). A resumed run trains again from
        its checkpoint up to where the killed process stopped, and logs those steps again with the
        same values; its logger drops them (`RunLogger`), so the history holds each step as often
        as an uninterrupted run's: values are never logged twice, and none is missing. (Only
        discarding is possible: MLflow has no way to delete a logged value.)"""
        counts: dict[tuple[str, int], int] = {}
        for key in self.client.get_run(self.run_id).data.metrics:
            for metric in self.client.get_metric_history(self.run_id, key):
                counts[(key, metric.step)] = counts.get((key, metric.step), 0) + 1
        return counts

    def reap_orphans(self, experiment: str) -> list[str]:
        """Mark KILLED the RUNNING runs of this experiment (an id) whose process, on this host, is gone."""
        host = socket.gethostname()
        orphans = []
        for run in self.client.search_runs([experiment], "attributes.status = 'RUNNING'", max_results=1000):
            tags = run.data.tags
            if tags.get("expspec.host") != host or not tags.get("expspec.pid", "").isdigit():
                continue  # another machine's run, or one from before these tags: cannot tell
            if _alive(int(tags["expspec.pid"])):
                continue
            run_id = run.info.run_id
            self.client.set_tag(run_id, "expspec.error", f"process {tags['expspec.pid']} on {host} ended without "
                                f"closing the run (SIGKILL or out of memory); `exp resume {run_id}` continues it")
            self.client.set_terminated(run_id, "KILLED")
            orphans.append(run_id)
        return orphans

    def start(self, log_params: bool = True) -> str:
        from mlflow.entities import Param

        from framework.interrupts import deferred

        op = self.operative
        experiment = experiment_id(self.client, op["paper"])
        describe_experiment(self.client, experiment, self.spec_path)
        run_name = self.context.run_name or self.run_name(experiment)  # a sweep names its trials
        tags = {
            **context_tags(self.spec_path),
            "mlflow.runName": run_name,
            "expspec.name": op["name"],
            "expspec.spec_path": self.spec_path,
            "expspec.spec_hash": self.spec_hash,
            "expspec.overrides": " ".join(self.overrides),
            **{f"expspec.version.{k}": v for k, v in package_versions().items()},
            **process_tags(),
            **self.extra_tags,
            **self.context.run_tags,
        }
        if self.parent_run_id:
            tags[PARENT_TAG] = self.parent_run_id
        if self.context.rerun_of:
            tags["expspec.rerun_of"] = self.context.rerun_of
        if op["description"]:
            tags["mlflow.note.content"] = op["description"]
        state = git_state()
        dirty = False
        if state:
            tags["mlflow.source.git.commit"], dirty = state
            tags["expspec.git_dirty"] = str(dirty).lower()
        self.reap_orphans(experiment)
        try:  # the run exists once created: an error or Ctrl-C while it is filled in still ends it
            with deferred():  # a signal during create_run is raised here, once run_id is known
                self.run_id = self.client.create_run(experiment, run_name=run_name, tags=tags).info.run_id
            params = [Param(k, v[:_MAX_PARAM]) for k, v in run_params(op).items()] if log_params else []
            for start in range(0, len(params), 100):
                self.client.log_batch(self.run_id, params=params[start : start + 100])
            self.client.log_text(self.run_id, yaml.safe_dump(op, sort_keys=False), "resolved_spec.yaml")
            log_context(self.client, self.run_id, dirty)
        except BaseException as error:
            self.finish(error)
            raise
        return self.run_id

    def run_name(self, experiment: str) -> str:
        """What the MLflow UI's Run Name column shows, saying what differs (`run_name_for`): a
        stage run by its stage; a top-level run by the spec's name and its overrides, with a short
        spec hash when the experiment already has a top-level run of that name and another hash."""
        name = self.operative["name"]
        if self.parent_run_id:
            return name.rsplit("/", 1)[-1]  # a stage (`spec/train`): its parent names the spec
        name = run_name_for(f"{name} {self.kind}" if self.kind else name, self.overrides)
        if "'" in name or self._name_taken(experiment, name):
            name = f"{name} #{self.spec_hash[:6]}"
        return name

    def _name_taken(self, experiment: str, name: str) -> bool:
        runs = self.client.search_runs([experiment], f"attributes.run_name = '{name}'", max_results=200)
        return any(PARENT_TAG not in r.data.tags and r.data.tags.get("expspec.spec_hash") != self.spec_hash
                   for r in runs)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        from framework.interrupts import deferred

        now = int(time.time() * 1000)
        entries = [Metric(k, v, now, 0) for k, v in metrics.items()]
        with deferred():  # never cut in half by Ctrl-C (framework/interrupts.py)
            for start in range(0, len(entries), 500):
                self.client.log_batch(self.run_id, metrics=entries[start : start + 500])

    def logger(self) -> RunLogger:
        """Lightning's logger for this run (imports Lightning)."""
        from framework.mlflow_logger import RunLogger

        assert self.run_id is not None
        from framework.store import remote_store, uploads_checkpoints

        log_model = self.operative["tracking"]["log_checkpoints"]
        return RunLogger(tracking_uri=self.uri, run_id=self.run_id, log_model=log_model,
                         already_logged=self.already_logged, upload_checkpoints=uploads_checkpoints(self.uri),
                         asynchronous=remote_store(self.uri))

    def finish(self, error: BaseException | None = None) -> None:
        """End the run: FINISHED, or FAILED with the error logged, or KILLED on Ctrl-C / exit."""
        if self.run_id is None:
            return
        from framework.interrupts import deferred

        with deferred():  # a second Ctrl-C waits until the run is ended (framework/interrupts.py)
            try:  # the status is written even when stopping the sampler or logging the error fails
                if self.system_metrics is not None:
                    self.system_metrics.stop()
                if error is not None:
                    self.client.set_tag(self.run_id, "expspec.error", f"{type(error).__name__}: {error}"[:5000])
                    self.client.log_text(self.run_id, "".join(traceback.format_exception(error)), "error.txt")
            finally:
                killed = isinstance(error, (KeyboardInterrupt, SystemExit))
                self.client.set_terminated(self.run_id,
                                           "FINISHED" if error is None else "KILLED" if killed else "FAILED")
