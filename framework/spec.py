"""The spec's typed sections (pydantic, closed with extra="forbid").

Component nodes (`model:`, `loss:`, ...) are typed here only as mappings tagged with the registry
kind they resolve in (`Node`); their arguments are checked against the registered constructor's
signature by `framework.validate`. Everything else in a spec is a plain typed field below, and
its default is part of the operative spec.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator


def Node(kind: str) -> Any:
    return Annotated[
        dict[str, Any],
        # schema.py replaces this placeholder with a $ref to the kind's node definitions.
        WithJsonSchema({"x-node": kind}),
    ]


# Value ranges of section fields (the same bounds as components/types.py, in pydantic's spelling).
PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
# -1: Lightning's "no limit" (max_epochs, max_steps) or "every device" (devices).
NoLimit = Literal[-1]
# An int counts batches; a float is a fraction of them.
BatchCount = Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0, le=1)]


def _fresh(factory: Callable[[], Any]) -> Any:
    """A default made new for each spec by `factory`, where a default instance would be deep-copied
    by pydantic every time it is used (`Trainer()`: 13 us a copy against 3 us to make one; several
    per spec and per sweep trial in `exp validate`, issue 13). The JSON Schema states the same
    default as a default instance would."""
    made = factory()
    shown = made.model_dump(mode="json") if isinstance(made, BaseModel) else made
    return Field(default_factory=factory, json_schema_extra={"default": shown})


class Section(BaseModel):
    # strict: YAML already gives real types, so "5" (a quoted string) is not silently an int.
    model_config = ConfigDict(extra="forbid", strict=True)


class Hardware(Section):
    """Where and how the run executes; mapped onto Lightning's Trainer arguments."""

    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps", "tpu"] = "auto"
    # How many devices (-1: all), "auto", or which ones (a list of device indices).
    devices: PositiveInt | NoLimit | Literal["auto"] | Annotated[list[NonNegativeInt], Field(min_length=1)] = 1
    precision: Literal["32-true", "32", "16-mixed", "bf16-mixed", "bf16-true", "16-true", "64-true"] = "32-true"
    strategy: Literal["auto", "ddp", "ddp_spawn", "ddp_find_unused_parameters_true", "fsdp", "deepspeed", "single_device"] = "auto"
    num_nodes: int = Field(1, ge=1)
    # Torch intra-op threads per run process. 1 by default: on 2-core machines, 2 threads made small
    # ops 10-25x slower under load, and sweeps split cores between processes.
    threads: int = Field(1, ge=1)


class Trainer(Section):
    """Lightning Trainer arguments a spec may set (passed through unchanged)."""

    # Lightning accepts 0 epochs or steps (nothing is trained); a spec that trains nothing says
    # `phases: [test]` instead, so 0 is taken for a mistake here. None: Lightning's default.
    max_epochs: PositiveInt | NoLimit | None = None
    max_steps: PositiveInt | NoLimit = -1
    limit_train_batches: BatchCount | None = None
    limit_val_batches: BatchCount | None = None
    limit_test_batches: BatchCount | None = None
    # Validate every this many training batches (an int), or at this fraction of an epoch.
    val_check_interval: PositiveInt | Annotated[float, Field(gt=0, le=1)] | None = None
    check_val_every_n_epoch: PositiveInt | None = 1
    num_sanity_val_steps: Annotated[int, Field(ge=-1)] = 0  # -1: the whole validation set
    log_every_n_steps: NonNegativeInt = 10  # 0: Lightning logs no step metrics
    gradient_clip_val: Annotated[float, Field(ge=0)] | None = None
    accumulate_grad_batches: int = Field(1, ge=1)
    deterministic: bool = False


class Tracking(Section):
    """MLflow tracking. The experiment is the spec's `paper`; the run is named after `name`."""

    # None: MLFLOW_TRACKING_URI if set, else sqlite:///mlflow.db in the working directory.
    uri: str | None = None
    # Upload the checkpoints Lightning wrote as run artifacts when the run ends.
    log_checkpoints: bool = False


class Init(Section):
    """Start from trained weights: the `model.*` weights of a checkpoint are loaded into the task's
    model before the first phase. Exactly one source:

    - `stage`: an earlier stage of this spec (its final checkpoint);
    - `spec`: another spec file (relative to this one), with `overrides` applied to it: a finished
      run of it with the same operative-spec hash is reused from the result cache or the tracking
      store, else it is run first. `overrides: ['seed=${seed}']` makes the upstream's seed follow
      this spec's, so a seeds sweep varies the pretrained model too (one cached upstream per seed);
    - `checkpoint`: a Lightning checkpoint file.
    """

    stage: str | None = None
    spec: str | None = None
    checkpoint: str | None = None
    # key.path=value overrides of the `spec` upstream (references resolved against this spec).
    overrides: list[str] = _fresh(list)
    # Fail on missing or unexpected weights; false loads what matches (e.g. a new head).
    strict: bool = True

    @model_validator(mode="after")
    def _one_source(self) -> "Init":
        given = [k for k in ("stage", "spec", "checkpoint") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of stage, spec, checkpoint (got {', '.join(given) or 'none'})")
        if self.overrides and self.spec is None:
            raise ValueError("overrides apply to an upstream spec: give them with `spec`")
        return self


class Distribution(Section):
    """One random-search dimension."""

    distribution: Literal["uniform", "log_uniform", "int_uniform", "choice"]
    low: float | None = None
    high: float | None = None
    values: list[Any] | None = None

    @model_validator(mode="after")
    def _bounds(self) -> "Distribution":
        if self.distribution == "choice":
            if not self.values:
                raise ValueError("choice needs a non-empty 'values' list")
        elif self.low is None or self.high is None or not self.low < self.high:
            raise ValueError(f"{self.distribution} needs low < high (got low={self.low}, high={self.high})")
        elif self.distribution == "log_uniform" and self.low <= 0:
            raise ValueError(f"log_uniform needs low > 0 (got {self.low})")
        return self


class RandomSearch(Section):
    count: int = Field(ge=1)
    seed: int = 0  # of the sampler, independent of the runs' seed
    params: dict[str, Distribution]


class OptunaSearch(Section):
    """A search sweep on Optuna (framework/queue.py): `trials` trials in all, however many workers
    share the queue; each trial's `params` are drawn by `sampler` when a worker takes it, and the
    run's last `metric` value is the trial's result, minimized or maximized. `pruner` stops a trial
    early from its `metric` reported at each validation; `seed` seeds the sampler (per trial
    number, so two workers never draw alike)."""

    trials: int = Field(ge=1, le=100_000)
    metric: str = Field(min_length=1, description="a metric key the runs report, e.g. val/loss")
    direction: Literal["minimize", "maximize"] = "minimize"
    sampler: Literal["tpe", "random", "qmc", "gp"] = "tpe"
    pruner: Literal["none", "median", "successive_halving", "hyperband"] = "none"
    seed: int = 0
    params: dict[str, Distribution] = Field(min_length=1)


class Sweep(Section):
    """Trials = grid (cartesian product) x zip (i-th values together) x random samples x seeds,
    or `optuna:` alone (a search: trials drawn as they are taken). Keys are override paths
    (`loss.terms.cvm.weight`); each trial is the spec with those overrides."""

    grid: dict[str, list[Any]] = _fresh(dict)
    zip: dict[str, list[Any]] = _fresh(dict)
    random: RandomSearch | None = None
    seeds: list[int] = _fresh(list)
    optuna: OptunaSearch | None = None

    @model_validator(mode="after")
    def _zip_lengths(self) -> "Sweep":
        if self.optuna is not None and (self.grid or self.zip or self.random or self.seeds):
            raise ValueError("optuna draws every trial itself: write it alone, without grid, zip, random or seeds")
        lengths = {len(v) for v in self.zip.values()}
        if len(lengths) > 1:
            raise ValueError(f"zip lists must have equal lengths, got {sorted(lengths)}")
        if any(len(v) == 0 for v in [*self.grid.values(), *self.zip.values()]):
            raise ValueError("sweep lists must not be empty")
        return self


class Spec(Section):
    """A whole experiment. `extends:` is consumed by the loader and never reaches this type."""

    name: str = Field(min_length=1)
    paper: str = Field(pattern=r"^[a-z0-9_]+$", description="paper slug; the MLflow experiment")
    description: str = ""
    seed: int = 0
    task: Node("tasks")
    # Optional: a task that needs none (a profiler, a sampler with its own inputs) omits them;
    # the builder says so when a task needs one that is missing.
    data: Node("data") | None = None
    model: Node("models") | None = None
    loss: Node("losses") | None = None
    optimizer: Node("optimizers") | None = None
    scheduler: Node("schedulers") | None = None
    metrics: list[Node("metrics")] = _fresh(list)
    callbacks: list[Node("callbacks")] = _fresh(list)
    hardware: Hardware = _fresh(Hardware)
    trainer: Trainer = _fresh(Trainer)
    tracking: Tracking = _fresh(Tracking)
    init: Init | None = None
    # What the runner does, in order: fit (train), test, predict. An analysis stage is [test].
    phases: list[Literal["fit", "test", "predict"]] = _fresh(lambda: ["fit", "test"])
    sweep: Sweep | None = None


# Spec field -> (registry kind, whether the field holds a list of nodes).
NODE_SECTIONS: dict[str, tuple[str, bool]] = {
    "task": ("tasks", False),
    "data": ("data", False),
    "model": ("models", False),
    "loss": ("losses", False),
    "optimizer": ("optimizers", False),
    "scheduler": ("schedulers", False),
    "metrics": ("metrics", True),
    "callbacks": ("callbacks", True),
}


def spec_hash(operative: dict[str, Any], upstream: str | None = None) -> str:
    """Identity of what a run computes: sha256 of the operative spec without `tracking` (where
    results are stored does not change them), `name`/`description`, and `sweep` (a trial is the
    same run as the spec with the trial's overrides written in), and `hardware.threads`. With
    `init`, `upstream` (the hash of the run whose weights it loads) replaces the init section.
    The text hashed is `json.dumps(content, sort_keys=True)`, written section by section."""
    return SpecHasher().hash(operative, upstream)


class SpecHasher:
    """`spec_hash` of many operative specs that share section objects, each section's text written
    once: a sweep's trials share most sections (framework.plan.SweepChecker), and writing a 1.8 KB
    spec as JSON takes 40-55 us, a quarter of planning a trial (hashing 10,000 planned trials: 2x
    faster, benchmarks/README.md). Texts are kept by (key, identity of the value), the value kept
    alive with its text, at most LIMIT of them; the values must not change while the hasher is in use."""

    LIMIT = 10_000

    def __init__(self) -> None:
        self._texts: dict[tuple[str, int], tuple[Any, str]] = {}

    def hash(self, operative: dict[str, Any], upstream: str | None = None) -> str:
        """`spec_hash(operative, upstream)`."""
        content = {k: v for k, v in operative.items() if k not in ("tracking", "name", "description", "sweep")}
        if upstream:  # the hash of the weights this run starts from (init)
            content["init"] = upstream
        parts = []
        for key in sorted(content):
            value = content[key]
            kept = self._texts.get((key, id(value)))
            if kept is None or kept[0] is not value:
                shown = value
                if key == "hardware" and isinstance(value, dict):  # threads change speed, not what is computed
                    shown = {k: v for k, v in value.items() if k != "threads"}
                kept = (value, f"{json.dumps(key)}: {json.dumps(shown, sort_keys=True)}")
                if len(self._texts) < self.LIMIT:
                    self._texts[(key, id(value))] = kept
            parts.append(kept[1])
        return hashlib.sha256(("{" + ", ".join(parts) + "}").encode()).hexdigest()[:16]
