"""Running a spec: load -> validate -> seed and threads -> build -> track -> phases -> cache.

- Phases (`phases:`, default [fit, test]) run in order; test uses the weights at the end of fit
  (not a "best" checkpoint), so reported test metrics belong to the model the run produced.
- Every finished run saves its final weights and metrics in the result cache, keyed by its
  operative-spec hash (`.expspec/cache/<hash>/`, or $EXPSPEC_CACHE_DIR) and uploads them to its
  MLflow run (framework/store.py): `init: {spec: ...}` and `exp reproduce` reuse them instead of
  retraining the same thing, from the result cache, else from the tracking store (another
  machine's run), else by running the spec.
- Every run that fits writes a resume checkpoint (components/callbacks/resume.py); `exp resume`
  continues a killed run from it exactly, into the same MLflow run (see `resume`).
- The spec is built before its MLflow run is opened: a spec error found while building leaves
  no run behind (see `run_unit`).
- A spec with stages runs them in order as children of one parent run; `init: {stage: s}` loads
  stage s's final weights.
- A run that waits for another (a later stage; a run whose `init: {spec}` upstream runs first) has
  its data built before the other one trains (`preflight`): a missing data file or a wrong
  environment stops the command in seconds, not after the upstream's training.
- Under DDP and multi-node launchers only global rank zero talks to MLflow and the result cache; the
  other ranks train without a logger (Lightning logs from rank zero only anyway).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

from framework.errors import Mark, Problem, SpecError
from framework.invocation import RunContext, current, ranks_run_id, shared_with_ranks
from framework.loader import load_spec
from framework.plan import Unit, validate_plan
from framework.result_cache import RunResult, cache_dir, cached, save_result
from framework.schema import LiveSchemas
from framework.spec import SpecHasher
from framework.store import fetch_result, upload_result


def runs_dir() -> Path:
    """Lightning's own files (checkpoints) go under here, by MLflow experiment id and run id
    ($EXPSPEC_RUNS_DIR, or the command's context: framework/invocation.py)."""
    return current().runs_dir


def is_rank_zero() -> bool:
    """Global rank zero under torchrun, SLURM and Lightning's own DDP launcher (which re-runs the
    command with LOCAL_RANK/NODE_RANK set)."""
    for key in ("RANK", "SLURM_PROCID", "LOCAL_RANK", "NODE_RANK"):
        if os.environ.get(key, "0") != "0":
            return False
    return True


def prepare(spec_path: str | Path, overrides: list[str] | None = None) -> list[Unit]:
    """Load and validate against the live signatures: the units (stages) to run, or a SpecError."""
    return validate_plan(load_spec(spec_path, overrides), LiveSchemas())


def unit_hashes(units: list[Unit], spec_path: str | Path,
                upstream_hash: Callable[[Path, list[str]], str] | None = None,
                hasher: SpecHasher | None = None) -> list[str]:
    """Each unit's hash; a unit that loads earlier weights includes their hash (see spec_hash).
    `upstream_hash(spec, overrides)` hashes an `init: {spec}` upstream (default: prepared live).
    `hasher`: one SpecHasher for all of a sweep's trials (its planning passes one)."""
    upstream_hash = upstream_hash or (lambda other, overrides: plan_hash(prepare(other, overrides), other))
    hashes: dict[str | None, str] = {}
    out = []
    for unit in units:
        init = unit.operative.get("init") or {}
        upstream = None
        if init.get("stage"):
            upstream = hashes[init["stage"]]
        elif init.get("spec"):
            other = _relative(unit, init["spec"])
            upstream = upstream_hash(other, init["overrides"])
        elif init.get("checkpoint"):
            upstream = f"file:{Path(init['checkpoint']).resolve()}"
        hashes[unit.stage] = (hasher or SpecHasher()).hash(unit.operative, upstream)
        out.append(hashes[unit.stage])
    return out


def plan_hash(units: list[Unit], spec_path: str | Path,
              upstream_hash: Callable[[Path, list[str]], str] | None = None,
              hasher: SpecHasher | None = None) -> str:
    hashes = unit_hashes(units, spec_path, upstream_hash, hasher)
    if len(hashes) == 1:
        return hashes[0]
    import hashlib

    return hashlib.sha256("+".join(hashes).encode()).hexdigest()[:16]


def _relative(unit: Unit, name: str) -> Path:
    return Path(unit.loaded.source).parent / name


def obtain(spec_path: str | Path, overrides: list[str] | None = None, fresh: bool = False) -> RunResult:
    """A finished result of this spec: from the result cache, else from the tracking store (a
    finished run with its hash, downloaded into the result cache), else run it."""
    units = prepare(spec_path, overrides)
    if not fresh:
        total_hash = plan_hash(units, spec_path)
        hit = cached(total_hash) or fetch_result(total_hash, units[0].operative)
        if hit is not None:
            return hit
    return run(spec_path, overrides)


def _quiet_lightning() -> None:
    import logging
    import warnings

    from lightning.fabric.utilities.warnings import PossibleUserWarning

    for name in ("lightning.pytorch", "lightning.fabric", "lightning", "mlflow"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # Lightning's hints about a setup (few dataloader workers, a logging interval longer than an
    # epoch) repeat in every run of a spec and bury the run's own lines; a spec states its setup.
    warnings.filterwarnings("ignore", category=PossibleUserWarning)
    for message in (".*does not have many workers.*", ".*GPU available but not used.*", ".*LeafSpec.*",
                    ".*_pytree.*", ".*is an invalid version.*"):
        warnings.filterwarnings("ignore", message=message)


def load_weights(task: Any, checkpoint: str, unit: Unit) -> list[str]:
    """Load the `model.*` weights of a checkpoint (a Lightning .ckpt or our cache file) into the
    task's model; the tensors not loaded, described. With `init.strict: true` (the default) the
    model and the checkpoint must hold the same tensor names with the same shapes, else a
    SpecError at `init` names every difference. With `strict: false` every tensor whose name and
    shape match is loaded and the rest are skipped (a new head of another size keeps its fresh
    initialization), said in a warning and in the run's tag `expspec.init_skipped`."""
    import logging

    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state = state.get("state_dict", state)
    weights = {k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")}
    if not weights:
        raise ValueError(f"{checkpoint} holds no 'model.*' weights")
    own = task.model.state_dict()
    matching = {k: v for k, v in weights.items() if k in own and tuple(v.shape) == tuple(own[k].shape)}
    skipped = [f"{k} (shape {tuple(weights[k].shape)} in the checkpoint, {tuple(own[k].shape)} in the model)"
               for k in weights if k in own and k not in matching]
    skipped += [f"{k} (not in the checkpoint)" for k in own if k not in weights]
    skipped += [f"{k} (not in the model)" for k in weights if k not in own]
    if skipped and unit.operative["init"]["strict"]:
        mark = unit.loaded.value_mark(("init", "strict")) or Mark(unit.loaded.source)
        path = ("stages", unit.stage, "init") if unit.stage else ("init",)
        raise SpecError([Problem(mark, path, f"the weights of {checkpoint} do not fit the model: "
                                 + "; ".join(skipped) + ". With `init.strict: false` the tensors that "
                                 "match by name and shape are loaded and these are skipped")])
    task.model.load_state_dict(matching, strict=False)
    if skipped:
        logging.getLogger("expspec").warning(
            f"init: loaded {len(matching)} of {len(own)} tensors of the model from {checkpoint}; skipped "
            + "; ".join(skipped))
    return skipped


def run(spec_path: str | Path, overrides: list[str] | None = None, context: RunContext | None = None) -> RunResult:
    """Run a spec: one run, or its stages as children of a parent run. `context`: what the
    command was told for the run it starts (framework/invocation.py; default: nothing)."""
    overrides = list(overrides or [])
    units = prepare(spec_path, overrides)
    hashes = unit_hashes(units, spec_path)
    if len(units) == 1 and units[0].stage is None:
        return run_unit(units[0], hashes[0], overrides, context=context)
    return run_stages(units, hashes, plan_hash(units, spec_path), overrides, context)


def run_stages(units: list[Unit], hashes: list[str], total_hash: str, overrides: list[str],
               context: RunContext | None = None) -> RunResult:
    """The stages in order, each a child run of one parent run; a stage with `init: {stage: s}`
    starts from stage s's final weights. The parent's metrics are every stage's final metrics,
    keyed `stage:split/name` in the result (the keys claims.yaml checks read, e.g.
    `laplace:test/nll`) and logged to the parent MLflow run under the same key: one spelling in
    claims, `exp compare` and the MLflow UI, and `stage/split/name` would read as a split path."""
    from framework.tracking import Tracker

    preflight(units[1:])
    first = units[0].operative
    parent_op = {**first, "name": first["name"].rsplit("/", 1)[0]}
    tracker = Tracker(parent_op, units[0].loaded.source, total_hash, overrides, context=context,
                      extra_tags={"expspec.stages": ",".join(str(u.stage) for u in units)}) if is_rank_zero() else None
    parent_id = tracker.start(log_params=False) if tracker else None
    results: dict[str, RunResult] = {}
    with ended_on_error(tracker):
        if tracker:
            announce(tracker, f"started ({len(units)} stages as child runs)")
        for unit, unit_hash in zip(units, hashes):
            init = unit.operative.get("init") or {}
            checkpoint = results[init["stage"]].checkpoint if init.get("stage") else None
            results[str(unit.stage)] = run_unit(unit, unit_hash, overrides, parent_run_id=parent_id,
                                                init_checkpoint=checkpoint)
        metrics = {f"{stage}:{k}": v for stage, r in results.items() for k, v in r.metrics.items()}
        result = RunResult(run_id=parent_id, metrics=metrics, operative=parent_op, spec_hash=total_hash,
                           checkpoint=list(results.values())[-1].checkpoint, stages=results)
        if tracker:
            tracker.log_metrics(metrics)
            upload_result(tracker.client, parent_id, result)
    if tracker:
        tracker.finish()
        save_result(result)
    return result


def preflight(units: list[Unit]) -> None:
    """Build each unit's data (the constructor only: a data module loads in `setup`) and drop it,
    so its mistakes surface before an earlier run trains. The random state is restored after, so
    the runs draw the same numbers as without it. Models are not pre-built: a model's constructor
    may load gigabytes of weights (pretrained_lm), and its data is what names the wrong thing far
    more often."""
    import random

    import numpy as np
    import torch

    from framework.builder import Builder

    for unit in units:
        if not unit.operative.get("data"):
            continue
        state = random.getstate(), np.random.get_state()
        with torch.random.fork_rng(devices=[]), default_dtype(unit.operative["hardware"]["precision"]):
            try:
                Builder(unit.loaded).node("data", unit.operative["data"], ("data",))
            finally:
                random.setstate(state[0])
                np.random.set_state(state[1])


def _resolve_init(unit: Unit, init_checkpoint: str | None) -> str | None:
    init = unit.operative.get("init") or {}
    if init.get("stage"):
        return init_checkpoint
    if init.get("spec"):
        from framework.multinode import resolved_once

        other = _relative(unit, init["spec"])
        key = f"init/{other.resolve()}/{' '.join(init['overrides'])}"  # one per upstream and overrides
        return resolved_once(lambda: _upstream_checkpoint(other, init["overrides"]), key, cache_dir())
    if init.get("checkpoint"):
        path = Path(init["checkpoint"])
        if not path.is_file():
            path_key = ("init", "checkpoint")
            raise SpecError([Problem(unit.loaded.value_mark(path_key) or Mark(unit.loaded.source), path_key,
                                     f"checkpoint file not found: {path}")])
        return str(path)
    return None


def _upstream_checkpoint(other: Path, overrides: list[str]) -> str:
    """The final weights of an `init: {spec}` upstream, obtained (cached, else run)."""
    result = obtain(other, overrides)
    if not result.checkpoint:
        raise RuntimeError(f"{other} finished without a checkpoint to initialize from")
    return result.checkpoint


def run_unit(
    unit: Unit,
    unit_hash: str,
    overrides: list[str],
    parent_run_id: str | None = None,
    init_checkpoint: str | None = None,
    resume_run_id: str | None = None,
    resume_checkpoint: str | None = None,
    context: RunContext | None = None,
) -> RunResult:
    """One run: seed, build, track, run the phases, cache the final weights. The MLflow run ends
    FINISHED, or FAILED/KILLED with the error when anything here raises. The spec is built before
    the run is opened: a mistake found while building (a size the data contradicts, init weights
    that do not fit) is a SpecError and leaves no run in the store; any other build error is
    recorded as a FAILED run. `context`: what this run is told (see `run`)."""
    operative = unit.operative
    context = context or RunContext()
    _quiet_lightning()
    # The upstream spec of `init: {spec}` may run here first, in this process: threads and seed
    # are set after it, so a run draws the same random numbers whether its upstream was cached or not.
    if (operative.get("init") or {}).get("spec"):
        preflight([unit])
    checkpoint = _resolve_init(unit, init_checkpoint)
    _seed(operative)
    try:
        built, skipped = _build(unit, checkpoint), None
    except SpecError:
        raise
    except Exception as error:
        built, skipped = None, error
    tracker, run_id = _open_run(unit, unit_hash, overrides, parent_run_id, resume_run_id, context)
    with ended_on_error(tracker), shared_with_ranks(run_id if tracker else None):
        if skipped is not None:
            raise skipped
        if tracker:
            _tag_init(tracker, run_id, checkpoint, built.skipped_weights)
        trainer = _trainer(built, tracker, context.optuna_trial)
        metrics = run_phases(trainer, built, operative["phases"], resume_checkpoint)
        final = _save_final(built.task, unit_hash) if is_rank_zero() else None
        result = RunResult(run_id=run_id, metrics=metrics, operative=operative, spec_hash=unit_hash, checkpoint=final)
        if tracker:
            tracker.client.set_tag(run_id, "expspec.checkpoint", final or "")
            if operative["tracking"]["log_checkpoints"] and last_checkpoint(run_id):
                tracker.client.log_artifact(run_id, str(last_checkpoint(run_id)), "checkpoints")
            upload_result(tracker.client, run_id, result)
    if tracker:
        tracker.finish()
        save_result(result)
    return result


def _build(unit: Unit, checkpoint: str | None) -> Any:
    """The built spec, with the init weights loaded (`built.skipped_weights`: what was not)."""
    from framework.builder import Builder

    with default_dtype(unit.operative["hardware"]["precision"]):
        built = Builder(unit.loaded).build(unit.operative)
    built.skipped_weights = load_weights(built.task, checkpoint, unit) if checkpoint else []
    return built


def _tag_init(tracker: Any, run_id: str, checkpoint: str | None, skipped: list[str]) -> None:
    if checkpoint:
        tracker.client.set_tag(run_id, "expspec.init_checkpoint", checkpoint)
    if skipped:
        tracker.client.set_tag(run_id, "expspec.init_skipped", ", ".join(skipped)[:5000])


@contextlib.contextmanager
def default_dtype(precision: str) -> Iterator[None]:
    """Build a `64-true` spec with float64 as torch's default dtype (restored after), so that what a
    component computes at construction (a basis on a grid, a data set, a reference solution) is
    float64 from the start. Lightning converts the module to float64 only later, which would keep
    float32's rounding in such tensors. Other precisions build in the default float32."""
    import torch

    previous = torch.get_default_dtype()
    if precision == "64-true":
        torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _seed(operative: dict[str, Any]) -> None:
    import lightning as L
    import torch

    torch.set_num_threads(operative["hardware"]["threads"])
    L.seed_everything(operative["seed"], workers=True, verbose=False)


def _open_run(unit: Unit, unit_hash: str, overrides: list[str], parent_run_id: str | None,
              resume_run_id: str | None, context: RunContext) -> tuple[Any, str | None]:
    """(tracker, run id): a new MLflow run, or the resumed one. Ranks other than zero get no
    tracker and the run id rank zero shared (`shared_with_ranks`; None before it has one)."""
    from framework.run_context import log_dataset
    from framework.tracking import Tracker

    if not is_rank_zero():
        return None, ranks_run_id()
    tracker = Tracker(unit.operative, unit.loaded.source, unit_hash, overrides, parent_run_id, context=context)
    run_id = tracker.attach(resume_run_id) if resume_run_id else tracker.start()
    with ended_on_error(tracker):
        if not resume_run_id:
            log_dataset(tracker.client, run_id, unit.operative, unit.loaded.source)
        tracker.monitor_system(resumed=bool(resume_run_id))
        announce(tracker, "resumed" if resume_run_id else "started")
    return tracker, run_id


@contextlib.contextmanager
def ended_on_error(tracker: Any) -> Iterator[None]:
    """Anything raised inside, Ctrl-C and SIGTERM included (framework.cli turns SIGTERM into
    KeyboardInterrupt), ends the tracker's run FAILED or KILLED with the error, then goes on up.
    Everything between a run's start and its `finish()` runs inside one: before, an interrupt
    that landed after training, while the result was uploaded, left the run RUNNING (found while
    tracing a CI failure whose cause was a store write cut in half, framework/interrupts.py)."""
    try:
        yield
    except BaseException as error:
        if tracker:
            tracker.finish(error)
        raise


def announce(tracker: Any, what: str) -> None:
    """`run <id> started: <run name> in experiment <paper>, store <uri>` on stderr: where to look
    while it runs (the MLflow UI shows a live run within seconds)."""
    run = tracker.client.get_run(tracker.run_id)
    print(f"run {tracker.run_id} {what}: '{run.info.run_name}' in experiment {tracker.operative['paper']}, "
          f"store {tracker.uri}", file=sys.stderr, flush=True)


def _trainer(built: Any, tracker: Any, optuna_trial: str | None = None) -> Any:
    """Lightning's Trainer for a built spec: a progress bar on a terminal (plain progress lines
    otherwise), our MLflow logger on rank zero, Lightning's files under runs_dir()."""
    import lightning as L
    from lightning.pytorch.callbacks import ProgressBar

    import registry
    from framework.search import pruning_callback

    callbacks = with_resume_checkpoint(built.callbacks, built.trainer_kwargs)
    pruning = pruning_callback(optuna_trial)  # a search sweep's trial with a pruner
    if pruning is not None:
        callbacks.append(pruning)
    lines = registry.KINDS["callbacks"].load("progress_lines")
    if not any(isinstance(c, (ProgressBar, lines)) for c in callbacks):
        callbacks.append(registry.KINDS["callbacks"].load("progress_bar")() if sys.stderr.isatty() else lines())
    return L.Trainer(
        **built.trainer_kwargs,
        callbacks=callbacks,
        logger=tracker.logger() if tracker else False,
        default_root_dir=str(runs_dir()),
        enable_progress_bar=any(isinstance(c, ProgressBar) for c in callbacks),
        enable_model_summary=False,
    )


def with_resume_checkpoint(callbacks: list[Any], trainer_kwargs: dict[str, Any]) -> list[Any]:
    """The spec's callbacks and a ResumeCheckpoint (the file `exp resume` reads), unless the spec
    lists one (to set its cadence). Being a Checkpoint callback, it replaces Lightning's default
    checkpoint; a user's own `checkpoint` callbacks still write their files."""
    resume_checkpoint = _resume_checkpoint()
    if any(isinstance(c, resume_checkpoint) for c in callbacks):
        return list(callbacks)
    return [*callbacks, resume_checkpoint()]


def _resume_checkpoint() -> Any:
    """The `resume_checkpoint` callback class, through the registry like every component."""
    import registry

    return registry.KINDS["callbacks"].load("resume_checkpoint")


def resume_file() -> str:
    """The name of the file the resume checkpoint writes (`exp resume` reads it)."""
    return _resume_checkpoint().FILE


def run_phases(trainer: Any, built: Any, phases: list[str], resume_checkpoint: str | None = None) -> dict[str, float]:
    """Run the phases (fit, test, predict) in order; the last value of every scalar metric any
    phase produced. An interrupted fit raises KeyboardInterrupt (the run is marked KILLED)."""
    metrics: dict[str, float] = {}
    for phase in phases:
        if phase == "fit":
            trainer.fit(built.task, datamodule=built.data, ckpt_path=resume_checkpoint)
            if trainer.interrupted:
                raise KeyboardInterrupt("training was interrupted")
        elif phase == "test":
            trainer.test(built.task, datamodule=built.data, verbose=False)
        else:
            trainer.predict(built.task, datamodule=built.data, return_predictions=False)
        # each phase resets Lightning's callback_metrics: keep the last value of every key
        metrics.update({k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1})
    return metrics


def _save_final(task: Any, unit_hash: str) -> str:
    """Save the task's final weights in the result cache's folder of its hash; their path. Written to a
    temporary file and renamed over final.ckpt, never in place: an earlier run's artifact may be
    a hard link to the old file (framework/store.py `log_file`) and keeps its own weights."""
    import torch

    folder = cache_dir() / unit_hash
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / "final.ckpt"
    scratch = folder / f".final-{os.getpid()}.ckpt"  # one per process: two may save one hash
    try:
        torch.save({"state_dict": task.state_dict()}, scratch)
        os.replace(scratch, final)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    return str(final)


def last_checkpoint(run_id: str) -> Path | None:
    """The run's ResumeCheckpoint file, runs_dir()/<experiment>/<run>/checkpoints/resume.ckpt:
    never another checkpoint callback's file (a "best" one would restart from an earlier step)."""
    found = sorted(runs_dir().glob(f"*/{run_id}/checkpoints/{resume_file()}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None
