"""The spec's typed sections (pydantic, closed with extra="forbid").

Component nodes (`model:`, `loss:`, ...) are typed here only as mappings tagged with the registry
table they resolve in (`Node`); their arguments are checked against the registered constructor's
signature by `framework.validate`. Everything else in a spec is a plain typed field below, and
its default is part of the operative spec.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema


def Node(table: str) -> Any:
    return Annotated[
        dict[str, Any],
        # schema.py replaces this placeholder with a $ref to the table's node definitions.
        WithJsonSchema({"x-node": table}),
    ]


class Section(BaseModel):
    # strict: YAML already gives real types, so "5" (a quoted string) is not silently an int.
    model_config = ConfigDict(extra="forbid", strict=True)


class Hardware(Section):
    """Where and how the run executes; mapped onto Lightning's Trainer arguments."""

    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps", "tpu"] = "auto"
    devices: int | Literal["auto"] | list[int] = 1
    precision: Literal["32-true", "32", "16-mixed", "bf16-mixed", "bf16-true", "16-true", "64-true"] = "32-true"
    strategy: Literal["auto", "ddp", "ddp_spawn", "ddp_find_unused_parameters_true", "fsdp", "deepspeed", "single_device"] = "auto"
    num_nodes: int = Field(1, ge=1)
    # Torch intra-op threads per run process. 1 by default: on 2-core machines, 2 threads made small
    # ops 10-25x slower under load, and sweeps split cores between processes.
    threads: int = Field(1, ge=1)


class Trainer(Section):
    """Lightning Trainer arguments a spec may set (passed through unchanged)."""

    max_epochs: int | None = None
    max_steps: int = -1
    limit_train_batches: int | float | None = None
    limit_val_batches: int | float | None = None
    limit_test_batches: int | float | None = None
    val_check_interval: int | float | None = None
    check_val_every_n_epoch: int | None = 1
    num_sanity_val_steps: int = 0
    log_every_n_steps: int = 10
    gradient_clip_val: float | None = None
    accumulate_grad_batches: int = Field(1, ge=1)
    deterministic: bool = False


class Tracking(Section):
    """MLflow tracking. The experiment is the spec's `paper`; the run is named after `name`."""

    # None: MLFLOW_TRACKING_URI if set, else sqlite:///mlflow.db in the working directory.
    uri: str | None = None
    # Upload the checkpoints Lightning wrote as run artifacts when the run ends.
    log_checkpoints: bool = False


class Spec(Section):
    """A whole experiment. `extends:` is consumed by the loader and never reaches this type."""

    name: str = Field(min_length=1)
    paper: str = Field(pattern=r"^[a-z0-9_]+$", description="paper slug; the MLflow experiment")
    description: str = ""
    seed: int = 0
    task: Node("tasks")
    data: Node("data")
    model: Node("models")
    loss: Node("losses") | None = None
    optimizer: Node("optimizers") | None = None
    scheduler: Node("schedulers") | None = None
    metrics: list[Node("metrics")] = []
    callbacks: list[Node("callbacks")] = []
    hardware: Hardware = Hardware()
    trainer: Trainer = Trainer()
    tracking: Tracking = Tracking()


# Spec field -> (registry table, whether the field holds a list of nodes).
NODE_SLOTS: dict[str, tuple[str, bool]] = {
    "task": ("tasks", False),
    "data": ("data", False),
    "model": ("models", False),
    "loss": ("losses", False),
    "optimizer": ("optimizers", False),
    "scheduler": ("schedulers", False),
    "metrics": ("metrics", True),
    "callbacks": ("callbacks", True),
}


def spec_hash(operative: dict[str, Any]) -> str:
    """Identity of what a run computes: sha256 of the operative spec without `tracking`
    (where results are stored does not change them) and without `name`/`description`."""
    content = {k: v for k, v in operative.items() if k not in ("tracking", "name", "description")}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
