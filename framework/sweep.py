"""`exp sweep`: run a spec's trials in separate processes under one MLflow parent run.

- Every trial is validated before the first one starts, in one pass over the parsed spec and
  without importing torch (`framework.plan.SweepChecker`); a sweep has at most
  `framework.plan.MAX_TRIALS` trials.
- Each trial is a process of its own, so a crashed or killed trial ends only itself. By default
  (`--isolate fork`) it is forked from a warm server that imported torch, Lightning, MLflow and
  the sweep's components once (`ForkedTrials`): the seconds those imports take are paid once per
  sweep, not once per trial. `--isolate process` starts a fresh interpreter per trial
  (`TrialProcesses`). Both run the same `exp run` code with the same arguments and give the same
  numbers.
- `--jobs N` runs N trials at a time; a trial runs with the spec's `hardware.threads` (default 1),
  capped at cores // N, since on small machines oversubscribed threads are far slower. Trials do
  not take more threads than the spec says when fewer jobs run: a trial's numbers then do not
  depend on `--jobs` (float reductions differ with the thread count). A `hardware.threads` the
  user's overrides (or the sweep's axes) set is used as given.
- A trial whose operative-spec hash already has a FINISHED run in the experiment is skipped
  (resume), and the sweep says so; the parent run of an earlier invocation of the same sweep is
  reused, so all trials stay under one parent. A skipped trial whose run is not a child of this
  parent (a plain `exp run`, another sweep's trial) is linked into it: a FINISHED child run
  holding a copy of that run's params, metric histories and tags, tagged `expspec.linked_from`
  with the original's id (an MLflow run has one parent, so the original stays where it is). The
  parent then covers the whole grid: `exp compare PARENT`, its table, its plot, the MLflow UI.
- Trials are named by what they vary (`weight=3.0`): the Run Name column of the MLflow UI shows
  about 15 characters, and the parent run names the spec.
- Trials' result and log files live in a temporary folder, removed when the sweep ends.
- Failures are reported as they happen and summarized at the end; `--fail-fast` stops launching
  trials after the first failure and stops the running ones (marked KILLED). Ctrl-C or SIGTERM
  stops the running trials too, and marks the parent run KILLED.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from framework.errors import Problem, SpecError
from framework.loader import apply_overrides, load_spec
from framework.marked_yaml import Loaded
from framework.plan import SweepChecker, Trial, validate_plan
from framework.store import LINK_TAG, RESULT_TAG

FINISHED, FAILED, SKIPPED, KILLED = "FINISHED", "FAILED", "SKIPPED", "KILLED"


@dataclass
class TrialOutcome:
    trial: Trial
    status: str
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    message: str = ""


@dataclass
class SweepResult:
    parent_run_id: str | None
    outcomes: list[TrialOutcome]

    @property
    def failed(self) -> list[TrialOutcome]:
        return [o for o in self.outcomes if o.status not in (FINISHED, SKIPPED)]


def plan_trials(spec_path: str | Path, overrides: list[str]) -> tuple[list[Trial], list[str], dict[str, Any]]:
    """Trials, their hashes, and the base operative spec; every trial validated first, in one pass
    against the committed schema (`framework.plan.SweepChecker`; no torch import). The hashes are
    the ones each trial's `exp run` computes from live signatures, as long as the committed schema
    is current (a test checks it is); an `init: {spec}` upstream is hashed once per overrides."""
    plan = SweepPlan(spec_path, overrides)
    return plan.trials, plan.hashes, plan.base


class SweepPlan:
    """A sweep's trials, their hashes and base operative spec (see `plan_trials`); `optuna`: the
    `sweep.optuna` section of a search sweep (its `trials` are then two probes, see
    `framework.plan.optuna_probes`), and `hash_of(trial)` hashes a trial drawn later."""

    def __init__(self, spec_path: str | Path, overrides: list[str]) -> None:
        from framework.schema import CommittedSchemas

        self.spec_path = spec_path
        self.checker = checker = SweepChecker(spec_path, overrides, CommittedSchemas(live_fallback=True))
        if not checker.trials:
            mark = checker.unresolved.value_mark(())
            raise SpecError([Problem(mark, ("sweep",), "this spec has no 'sweep:' section; use `exp run`")])
        self.upstreams: dict[tuple[Path, tuple[str, ...]], str] = {}
        # The section texts the trials' hashes share (framework.spec.spec_hash): the checker's
        # operative specs share their unchanged sections, which nothing changes.
        self.texts: dict[Any, Any] = {}
        self.hashes: list[str] = []
        problems = checker.check(lambda units: self.hashes.append(self.units_hash(units)))
        if problems:
            raise SpecError(problems)
        self.trials, self.base = checker.trials, checker.base[0].operative
        self.optuna: dict[str, Any] | None = checker.sweep["optuna"] if checker.sweep else None

    def units_hash(self, units: list[Any], path: str | Path | None = None) -> str:
        """The hash of a trial's units (of spec `path`, default the sweep's)."""
        from framework.runner import plan_hash

        return plan_hash(units, path or self.spec_path, self.upstream_hash, self.texts)

    def upstream_hash(self, other: Path, init_overrides: list[str]) -> str:
        """An `init: {spec}` upstream's hash, computed once per (spec, overrides)."""
        key = (other.resolve(), tuple(init_overrides))
        if key not in self.upstreams:
            units = validate_plan(load_spec(other, init_overrides), self.checker.schemas, self.checker.cache)
            self.upstreams[key] = self.units_hash(units, other)
        return self.upstreams[key]

    def hash_of(self, trial: Trial) -> str:
        """The spec hash of a trial (one drawn by a search); a SpecError when it is not valid."""
        return self.units_hash(self.checker.units(trial))


def _finished_hashes(client: Any, experiment_id: str, parent: str | None = None) -> dict[str, str]:
    """spec hash -> id of a FINISHED run with it in the experiment; a child of `parent` (this
    sweep's parent run) wins over a run elsewhere, so that an earlier link is found again."""
    runs = client.search_runs([experiment_id], filter_string="attributes.status = 'FINISHED'", max_results=5000)
    found: dict[str, str] = {}
    for run in sorted(runs, key=lambda r: r.data.tags.get(PARENT_TAG) == parent):  # this parent's last
        if "expspec.spec_hash" in run.data.tags:
            found[run.data.tags["expspec.spec_hash"]] = run.info.run_id
    return found


PARENT_TAG = "mlflow.parentRunId"
# A link holds no artifacts: it must not carry RESULT_TAG, or a store lookup by spec hash could
# pick the link (same hash, same start time as the original) and find no result.json.
_NOT_COPIED = (PARENT_TAG, "mlflow.runName", LINK_TAG, RESULT_TAG)


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


def run_sweep(
    spec_path: str | Path,
    overrides: list[str] | None = None,
    jobs: int = 1,
    fail_fast: bool = False,
    cores: int | None = None,
    echo: Any = print,
    isolate: str = "fork",
) -> SweepResult:
    """Run the spec's trials, `jobs` at a time, as child runs of one parent run (see the module
    docstring). The parent ends FINISHED when every trial finished or was skipped, else FAILED;
    KILLED, with the running trials stopped, when this process is interrupted (Ctrl-C, SIGTERM)."""
    from framework.runner import ended_on_error

    overrides = list(overrides or [])
    if isolate not in ISOLATIONS:
        raise ValueError(f"isolate must be one of {', '.join(ISOLATIONS)}, got {isolate!r}")
    plan = SweepPlan(spec_path, overrides)
    if plan.optuna:  # a search: its trials are drawn as they are taken, through a local queue
        return search_locally(spec_path, overrides, jobs, isolate, echo)
    trials, hashes, base = plan.trials, plan.hashes, plan.base
    preload = component_modules(base)
    if isolate == "fork":
        warm_context(preload)  # the server imports while the parent run is opened
    threads = _threads(base, overrides, jobs, cores)
    tracker, done = open_parent(spec_path, overrides, base, hashes)
    parent = tracker.run_id
    with ended_on_error(tracker):  # Ctrl-C or SIGTERM, at any point: the parent run ends KILLED
        outcomes, todo = skip_finished(trials, hashes, done, echo)
        given = " (as given)" if sets_threads(overrides) else ""
        echo(f"sweep {base['name']}: {len(trials)} trial(s), {len(todo)} to run, {jobs} job(s) x {threads} "
             f"thread(s){given}; parent run {parent}")
        link_skipped(tracker.client, parent, outcomes, echo)
        launcher = ForkedTrials(spec_path, overrides, parent, base["name"], threads, preload) if isolate == "fork" \
            else TrialProcesses(spec_path, overrides, parent, base["name"], threads)
        try:
            _run_pool(launcher, [(i, trials[i]) for i in todo], jobs, fail_fast, outcomes, len(trials), echo)
        finally:  # after Ctrl-C or SIGTERM too: _run_pool stopped the trials
            upload_trial_logs(tracker.client, parent, launcher.workdir, trials, echo)
            shutil.rmtree(launcher.workdir, ignore_errors=True)
        result = SweepResult(parent, [outcomes[i] for i in sorted(outcomes)])
        echo(summary(result))
        echo(f"compare: exp compare {parent}   browse: exp ui   (store {tracker.uri})")
        if result.failed:
            tracker.client.set_tag(parent, "expspec.error", f"{len(result.failed)} trial(s) did not finish")
    if result.failed:
        tracker.client.set_terminated(parent, "FAILED")
    else:
        tracker.finish()
    return result


def search_locally(spec_path: str | Path, overrides: list[str], jobs: int, isolate: str, echo: Any) -> SweepResult:
    """`exp sweep` of an `optuna:` search without `--queue`: one worker on a journal file beside
    the local cache (`.expspec/optuna.journal`), so a second invocation continues the same study."""
    from framework.queue import Worker
    from framework.runner import cache_dir

    queue = f"journal:{(cache_dir().parent / 'optuna.journal').resolve()}"
    report = Worker(spec_path, overrides, queue, jobs=jobs, isolate=isolate, echo=echo).run()
    return SweepResult(report.parent_run_id, report.outcomes)


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


def _threads(base: dict[str, Any], overrides: list[str], jobs: int, cores: int | None) -> int:
    """Torch threads per trial: the spec's hardware.threads capped at cores // jobs, or exactly the
    value the user's overrides give (an explicit choice wins over the tool's)."""
    if sets_threads(overrides):
        return base["hardware"]["threads"]
    return min(base["hardware"]["threads"], max(1, (cores or os.cpu_count() or 1) // max(1, jobs)))


def sweep_hash_of(hashes: list[str]) -> str:
    """A sweep's identity: the hash of its trials' spec hashes, in order."""
    import hashlib

    return hashlib.sha256("|".join(hashes).encode()).hexdigest()[:16]


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


# Imported once by the warm server that forks the trials (`ForkedTrials`), with the modules of
# the sweep's components: what every `exp run` otherwise imports again (~9 s on 2 cores).
PRELOAD = ["framework.warm"]


def sets_threads(overrides: list[str]) -> bool:
    """Whether these overrides set `hardware.threads` (as `hardware.threads=2` or `hardware={threads: 2}`)."""
    probe = Loaded(data={})
    try:
        apply_overrides(probe, overrides)
    except SpecError:
        return False
    hardware = probe.data.get("hardware")
    return isinstance(hardware, dict) and "threads" in hardware


class TrialLauncher:
    """Runs each trial as `exp run SPEC OVERRIDES... TRIAL-OVERRIDES... hardware.threads=N` in a
    process of its own, a child run of the parent (through $EXPSPEC_PARENT_RUN_ID); it reports
    its result in a JSON file ($EXPSPEC_RESULT_FILE) and its output goes to a log file, whose last
    line is the message of a failed trial. `hardware.threads=N` (the tool's choice) is left out
    when the user's overrides or the trial's own set hardware.threads: an explicit value wins.
    Subclasses say how the process starts: `TrialProcesses` (a fresh interpreter) or
    `ForkedTrials` (forked from a warm server)."""

    def __init__(self, spec_path: str | Path, overrides: list[str], parent_run_id: str, name: str,
                 threads: int) -> None:
        self.spec_path, self.overrides, self.parent_run_id = spec_path, overrides, parent_run_id
        self.name, self.threads = name, threads
        self.workdir = Path(tempfile.mkdtemp(prefix="expspec-sweep-"))
        self.running: dict[int, Any] = {}
        self.stopped = False

    def argv(self, trial: Trial) -> list[str]:
        given = [*self.overrides, *trial.overrides]
        threads = [] if sets_threads(given) else [f"hardware.threads={self.threads}"]
        return ["run", str(self.spec_path), *given, *threads]

    def run(self, i: int, trial: Trial, extra_env: dict[str, str] | None = None) -> TrialOutcome:
        """Run trial `i` to its end (called from a worker thread); `extra_env` adds to its environment."""
        result_file, log_file = self.workdir / f"{i}.json", self.workdir / f"{i}.log"
        env = {**os.environ, "EXPSPEC_PARENT_RUN_ID": self.parent_run_id, "EXPSPEC_RESULT_FILE": str(result_file),
               "EXPSPEC_RUN_NAME": trial.name, **(extra_env or {})}
        env.pop("EXPSPEC_RUN_ID", None)
        start = time.perf_counter()
        try:
            self.running[i] = self.start(self.argv(trial), env, log_file)
        except Exception as error:  # e.g. the warm server is gone: this trial fails, the sweep goes on
            return TrialOutcome(trial, FAILED, None, {}, time.perf_counter() - start, f"could not start: {error!r}")
        if self.stopped:  # stop() came while this trial was starting
            self.terminate(self.running[i])
        code = self.wait(self.running[i])
        seconds = time.perf_counter() - start
        if code == 0 and result_file.is_file():
            data = json.loads(result_file.read_text())
            return TrialOutcome(trial, FINISHED, data["run_id"], data["metrics"], seconds)
        lines = [line for line in log_file.read_text().splitlines() if line.strip()] if log_file.is_file() else []
        # died of a signal: its last line is whatever it printed before (a progress line), not why
        message = lines[-1] if lines and code >= 0 else _exit_text(code)
        return TrialOutcome(trial, _status(code), None, {}, seconds, message)

    def stop(self) -> None:
        """SIGTERM every trial still running: each marks its run KILLED (see framework.cli)."""
        self.stopped = True
        for handle in list(self.running.values()):
            self.terminate(handle)

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> Any:
        raise NotImplementedError

    def wait(self, handle: Any) -> int:
        raise NotImplementedError

    def terminate(self, handle: Any) -> None:
        raise NotImplementedError


def _status(code: int) -> str:
    """KILLED for a trial stopped by a signal (SIGTERM: --fail-fast or a scheduler, handled as
    Ctrl-C: exit 130; or died of SIGTERM/SIGKILL, e.g. the out-of-memory killer), else FAILED."""
    return KILLED if code in (-signal.SIGTERM, -signal.SIGKILL, 130, 143) else FAILED


def _exit_text(code: int) -> str:
    if code < 0:
        return f"killed by {signal.Signals(-code).name}" + (" (e.g. the out-of-memory killer)" if code == -signal.SIGKILL else "")
    return f"exit code {code}"


class TrialProcesses(TrialLauncher):
    """`exp sweep --isolate process`: each trial a fresh `python -m framework.cli run ...`, which
    imports torch, Lightning and MLflow again (seconds per trial)."""

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> subprocess.Popen:
        with open(log_file, "w") as log:
            return subprocess.Popen([sys.executable, "-m", "framework.cli", *argv], stdout=log,
                                    stderr=subprocess.STDOUT, env=env)

    def wait(self, handle: subprocess.Popen) -> int:
        return handle.wait()

    def terminate(self, handle: subprocess.Popen) -> None:
        if handle.poll() is None:
            handle.send_signal(signal.SIGTERM)


class ForkedTrials(TrialLauncher):
    """`exp sweep` (`--isolate fork`, the default): each trial a child forked from a warm server,
    multiprocessing's forkserver, which imported PRELOAD and the sweep's component modules once.

    - The server is a fresh interpreter started from this process (never forked from it), so no
      MLflow connection, thread or torch thread pool of this process reaches a trial; the server
      imports modules and runs nothing, so torch's thread pools start in each trial, after its
      `torch.set_num_threads`.
    - A trial is a process of its own: a crash, `os._exit` or SIGKILL ends that trial only
      (FAILED or KILLED, and the sweep goes on); SIGTERM ends it as Ctrl-C does (its run KILLED).
    - A trial gets the environment and working directory this process has when the trial starts
      (the server's are those of its own start), its output goes to its log file, and it runs
      `framework.cli.main` with the same arguments as `TrialProcesses`: same checks, same code,
      same numbers (a test compares the metrics of both). It exits without the interpreter's
      tear-down (multiprocessing ends forked children with os._exit, after flushing output).
    - The server lives as long as this process and serves every sweep it runs (`exp reproduce`);
      modules are preloaded when it starts, so a later sweep's own components are imported by
      each of its trials.
    """

    def __init__(self, spec_path: str | Path, overrides: list[str], parent_run_id: str, name: str,
                 threads: int, preload: list[str]) -> None:
        super().__init__(spec_path, overrides, parent_run_id, name, threads)
        self.context = warm_context(preload)

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> Any:
        process = self.context.Process(target=forked_trial, args=(argv, env, os.getcwd(), str(log_file)),
                                       name=f"expspec-trial-{log_file.stem}")
        process.start()
        return process

    def wait(self, handle: Any) -> int:
        handle.join()
        return handle.exitcode

    def terminate(self, handle: Any) -> None:
        if handle.exitcode is None:
            handle.terminate()


def warm_context(modules: list[str]) -> Any:
    """multiprocessing's forkserver context, its server started (in the background: its imports
    overlap what this process does next) with PRELOAD and `modules` when it is not running yet."""
    import multiprocessing
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *modules])
    forkserver.ensure_running()
    return context


def component_modules(operative: dict[str, Any]) -> list[str]:
    """The modules of the registered components the spec names, nested nodes and terms included
    (to preload them): every mapping whose `type` is a registered name, in any kind."""
    import registry

    names: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("type"), str):
                names.append(value["type"])
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(operative)
    modules = [reg.target(name).partition(":")[0] for name in dict.fromkeys(names)
               for reg in registry.KINDS.values() if name in reg]
    return list(dict.fromkeys(modules))


def forked_trial(argv: list[str], env: dict[str, str], cwd: str, log_file: str) -> None:
    """A forked trial: this trial's working directory, environment and log file, then `exp run`."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    from framework.cli import main

    sys.exit(main(argv))


ISOLATIONS = ("fork", "process")


def _run_pool(processes: TrialLauncher, todo: list[tuple[int, Trial]], jobs: int, fail_fast: bool,
              outcomes: dict[int, TrialOutcome], total: int, echo: Any) -> None:
    """Run the trials `jobs` at a time, in order, adding each outcome (by trial index) as it
    arrives. With `fail_fast`, the first failure stops the running trials and launches no more;
    those never launched get the status NOT RUN."""
    queue = list(todo)
    stopping = False
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, _stopped_on_interrupt(processes):
        pending: dict[Future, int] = {}
        while queue or pending:
            while queue and len(pending) < jobs and not stopping:
                i, trial = queue.pop(0)
                pending[pool.submit(processes.run, i, trial)] = i
            if not pending:
                break
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                outcome = future.result()
                outcomes[pending.pop(future)] = outcome
                echo(progress_line(outcome, len(outcomes), total))
                if outcome.status != FINISHED and fail_fast and not stopping:
                    stopping = True
                    echo("--fail-fast: stopping the running trials and launching no more")
                    processes.stop()
    for i, trial in queue:
        outcomes[i] = TrialOutcome(trial, "NOT RUN", message="not launched after a failure (--fail-fast)")


@contextmanager
def _stopped_on_interrupt(processes: TrialLauncher) -> Iterator[None]:
    """Ctrl-C or SIGTERM in the sweep's process stops the running trials (each marks its run
    KILLED) before the pool waits for them."""
    try:
        yield
    except BaseException:
        processes.stop()
        raise


def progress_line(outcome: TrialOutcome, done: int, total: int) -> str:
    if outcome.status == FINISHED:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in sorted(outcome.metrics.items()) if k.startswith("test/"))
        return f"[{done}/{total}] {outcome.trial.name}: finished in {outcome.seconds:.1f}s  {shown}"
    return f"[{done}/{total}] {outcome.trial.name}: {outcome.status} after {outcome.seconds:.1f}s: {outcome.message}"


def summary(result: SweepResult) -> str:
    counts: dict[str, int] = {}
    for outcome in result.outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    lines = ["summary: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for outcome in result.failed:
        lines.append(f"  {outcome.status:8s} {outcome.trial.name}: {outcome.message}")
    return "\n".join(lines)
