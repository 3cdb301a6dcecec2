"""What a command tells the runs it starts, as one typed object (`RunContext`), and the only place
it becomes environment variables: where a new process starts (`child_environ`).

- The user's configuration is read once, at the edge (`RunContext.from_environ`: a command, or a
  process that a launcher started): the store ($MLFLOW_TRACKING_URI), the result cache
  ($EXPSPEC_CACHE_DIR, default .expspec/cache) and Lightning's files ($EXPSPEC_RUNS_DIR, default
  .expspec/runs).
- What one process hands to the run it starts (the sweep parent, the trial's name and tags, the
  run it reruns, where to write its result, the Optuna trial to report to) is passed to the
  runner and the tracker as fields of the context, for that run only: a run that the run starts
  (an `init: {spec}` upstream, a stage) gets none of them (`for_other_run`).
- The store locations of the context a command works in are active while it runs (`use`), so
  that every lookup of a store (`tracking.tracking_uri`, `result_cache.cache_dir`,
  `runner.runs_dir`) sees them without the context being threaded through every function:
  `exp rerun --tracking-uri` and `exp reproduce --record`'s throwaway store change nothing in
  the process's environment, and nothing after them.
- `pin_cpu_numerics`: torch's CPU kernels pinned to AVX2, by the processes that compute (the
  `exp` console script, each trial's environment, the tests' configuration), not by `import framework`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The variables a launcher sets for the process it starts, one per hand-off field.
HANDOFF_VARIABLES = {
    "parent_run_id": "EXPSPEC_PARENT_RUN_ID",
    "run_name": "EXPSPEC_RUN_NAME",
    "run_tags": "EXPSPEC_RUN_TAGS",
    "rerun_of": "EXPSPEC_RERUN_OF",
    "result_file": "EXPSPEC_RESULT_FILE",
    "optuna_trial": "EXPSPEC_OPTUNA_TRIAL",
}
# Lightning's DDP launcher re-runs the command for ranks other than zero; they read rank zero's run
# id from here (`shared_with_ranks`). Never handed to a trial: it has a run of its own.
RANK_RUN_ID = "EXPSPEC_RUN_ID"


@dataclass(frozen=True)
class RunContext:
    """Where runs are stored, and what the run a command starts is told by whoever started it.

    Args:
        tracking_uri: The MLflow store when a spec's `tracking.uri` names none (None: sqlite:///mlflow.db).
        cache_dir: The local result cache (final weights and result.json by spec hash).
        runs_dir: Lightning's own files (resume checkpoints), by experiment and run id.
        parent_run_id: Nest the run under this one (a sweep's parent run).
        run_name: The run's name (a sweep names its trials by what they vary).
        run_tags: Tags the launcher adds (a queued trial's study and index, a SLURM job's id).
        rerun_of: The run `exp rerun` runs again (tag `expspec.rerun_of`).
        result_file: Where `exp run` writes its result as JSON (`exp sweep` reads each trial's there).
        optuna_trial: A search trial's study, trial and metric as JSON (framework/search.py, pruning).
    """

    tracking_uri: str | None = None
    cache_dir: Path = Path(".expspec/cache")
    runs_dir: Path = Path(".expspec/runs")
    parent_run_id: str | None = None
    run_name: str | None = None
    run_tags: Mapping[str, str] = field(default_factory=dict)
    rerun_of: str | None = None
    result_file: str | None = None
    optuna_trial: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> RunContext:
        """The context a process was started with: the user's settings and a launcher's hand-offs."""
        env = os.environ if environ is None else environ
        tags = json.loads(env.get("EXPSPEC_RUN_TAGS") or "{}")
        return cls(tracking_uri=env.get("MLFLOW_TRACKING_URI") or None,
                   cache_dir=Path(env.get("EXPSPEC_CACHE_DIR") or ".expspec/cache"),
                   runs_dir=Path(env.get("EXPSPEC_RUNS_DIR") or ".expspec/runs"),
                   parent_run_id=env.get("EXPSPEC_PARENT_RUN_ID") or None,
                   run_name=env.get("EXPSPEC_RUN_NAME") or None,
                   run_tags={str(k): str(v) for k, v in tags.items()},
                   rerun_of=env.get("EXPSPEC_RERUN_OF") or None,
                   result_file=env.get("EXPSPEC_RESULT_FILE") or None,
                   optuna_trial=env.get("EXPSPEC_OPTUNA_TRIAL") or None)

    def but(self, **changes: Any) -> RunContext:
        """A copy with `changes` (field=value)."""
        return dataclasses.replace(self, **changes)

    def for_other_run(self) -> RunContext:
        """The same stores, no hand-off: for a run this one starts (an upstream, a trial, a stage)."""
        return RunContext(tracking_uri=self.tracking_uri, cache_dir=self.cache_dir, runs_dir=self.runs_dir)


_ACTIVE: list[RunContext] = []  # process-wide, not a ContextVar: a sweep's worker threads read it


def current() -> RunContext:
    """The context of the command running in this process (`use`), else the one it was started with."""
    return _ACTIVE[-1] if _ACTIVE else RunContext.from_environ()


@contextlib.contextmanager
def use(context: RunContext) -> Iterator[RunContext]:
    """Make `context`'s stores the ones every store lookup in this process sees, until the block ends."""
    _ACTIVE.append(context)
    try:
        yield context
    finally:
        _ACTIVE.remove(context)


def child_environ(context: RunContext, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that starts a run under `context` (a forked or spawned sweep
    trial): `base` (default this process's), with the context's stores and hand-offs written as
    variables, no hand-off of this process's own left over, and the CPU kernels pinned."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in HANDOFF_VARIABLES.values() and k != RANK_RUN_ID}
    env.pop("MLFLOW_TRACKING_URI", None)
    if context.tracking_uri:
        env["MLFLOW_TRACKING_URI"] = context.tracking_uri
    env["EXPSPEC_CACHE_DIR"], env["EXPSPEC_RUNS_DIR"] = str(context.cache_dir), str(context.runs_dir)
    for name, variable in HANDOFF_VARIABLES.items():
        value = getattr(context, name)
        if value:
            env[variable] = json.dumps(dict(value)) if name == "run_tags" else str(value)
    pin_cpu_numerics(env)
    no_mlflow_telemetry(env)
    return env


@contextlib.contextmanager
def shared_with_ranks(run_id: str | None) -> Iterator[None]:
    """Rank zero's run id for the ranks Lightning's DDP launcher starts while the run trains: they
    inherit this process's environment when the trainer launches them, so it is in os.environ
    until the run ends (the one write to it outside a process's start), then as before."""
    before = os.environ.get(RANK_RUN_ID)
    if run_id:
        os.environ[RANK_RUN_ID] = run_id
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(RANK_RUN_ID, None)
        else:
            os.environ[RANK_RUN_ID] = before


def ranks_run_id() -> str | None:
    """In a rank other than zero: the run id rank zero shared (None before it has one)."""
    return os.environ.get(RANK_RUN_ID)


CPU_NUMERICS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_cpu_numerics(environ: MutableMapping[str, str] | None = None) -> None:
    """Pin the vector instructions of torch's own CPU kernels to AVX2 in `environ` (default this
    process's: call it before torch first computes): ATen's vectorized kernels and oneDNN's,
    unless the environment already names them or EXPSPEC_CPU_NUMERICS=native.

    A CPU run's numbers depend on them: AVX-512 kernels (softmax, reductions, convolutions) add in
    another order than AVX2 ones, and a difference in the last bit of a step becomes another curve
    after hundreds of steps. On 2026-12-02, on an AVX-512 machine, 13 of 23 papers' claim checks
    printed other numbers than their READMEs, which an AVX2 machine wrote (causim's headline even
    turned from a deviation into a pass). MKL is left to choose its own code path: its
    reproducibility mode (MKL_CBWR=AVX2) gave other numbers than the default path of either
    machine (cvm_fairness's check failed with it and passed without). AVX2 is what x86-64 machines
    of the last decade share, and the tiny CPU experiments of claims lose nothing by it. torch
    reads the variables when it first computes, so they are set by whatever starts a process that
    computes: the `exp` console script (`framework.cli.entry`), each sweep trial's environment
    (`child_environ`; the warm server's is the `exp` process's) and the tests' configuration
    (tests/conftest.py). On a GPU they only concern the few operations left on the CPU; on ARM
    they mean nothing. Importing framework sets nothing."""
    env = os.environ if environ is None else environ
    if env.get("EXPSPEC_CPU_NUMERICS", "portable") != "native":
        for name, value in CPU_NUMERICS.items():
            env.setdefault(name, value)


def no_mlflow_telemetry(environ: MutableMapping[str, str] | None = None) -> None:
    """Turn MLflow's usage telemetry off in `environ` (default this process's; call it before
    `import mlflow`), unless the environment already says MLFLOW_DISABLE_TELEMETRY.

    Not a preference but a race: on a machine that cannot reach the telemetry service, MLflow's
    config thread gives up and deletes `$_MLFLOW_TELEMETRY_SESSION_ID` from os.environ while the
    run's metrics thread reads os.environ for proxy settings: `API request ... log-batch failed
    with exception '_MLFLOW_TELEMETRY_SESSION_ID'` failed 1 of 32 trials of
    benchmarks/store_load.py on 2026-12-04. Set where `pin_cpu_numerics` is."""
    env = os.environ if environ is None else environ
    env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
