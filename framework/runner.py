"""Running a spec: load -> validate -> seed and threads -> track -> build -> fit -> test.

Tests run on the weights at the end of fit (not a "best" checkpoint), so the reported test
metrics belong to the model the run produced.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.loader import Loaded, load_spec
from framework.schema import LiveSchemas
from framework.spec import spec_hash
from framework.validate import validate

def runs_dir() -> Path:
    """Lightning's own files (checkpoints) go under here, by MLflow experiment id and run id."""
    return Path(os.environ.get("EXPSPEC_RUNS_DIR", ".expspec/runs"))


@dataclass
class RunResult:
    run_id: str | None
    metrics: dict[str, float]
    operative: dict[str, Any] = field(default_factory=dict)


def prepare(spec_path: str | Path, overrides: list[str] | None = None) -> tuple[Loaded, dict[str, Any]]:
    """Load and validate against the live signatures: the operative spec, or a SpecError."""
    loaded = load_spec(spec_path, overrides)
    return loaded, validate(loaded, LiveSchemas())


def _quiet_lightning() -> None:
    import logging
    import warnings

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*GPU available but not used.*")


def run(spec_path: str | Path, overrides: list[str] | None = None) -> RunResult:
    overrides = list(overrides or [])
    loaded, operative = prepare(spec_path, overrides)

    import lightning as L
    import torch
    from lightning.pytorch.callbacks import ProgressBar

    from framework.builder import Builder
    from framework.tracking import Tracker

    _quiet_lightning()
    torch.set_num_threads(operative["hardware"]["threads"])
    L.seed_everything(operative["seed"], workers=True, verbose=False)

    tracker = Tracker(operative, loaded.source, spec_hash(operative), overrides)
    run_id = tracker.start()
    try:
        built = Builder(loaded).build(operative)
        callbacks = list(built.callbacks)
        interactive = sys.stderr.isatty()
        if interactive and not any(isinstance(c, ProgressBar) for c in callbacks):
            from components.callbacks.progress import progress_bar

            callbacks.append(progress_bar())
        trainer = L.Trainer(
            **built.trainer_kwargs,
            callbacks=callbacks,
            logger=tracker.logger(),
            default_root_dir=str(runs_dir()),
            enable_progress_bar=any(isinstance(c, ProgressBar) for c in callbacks),
            enable_model_summary=False,
        )
        trainer.fit(built.task, datamodule=built.data)
        if trainer.interrupted:
            raise KeyboardInterrupt("training was interrupted")
        if hasattr(built.data, "test_dataloader"):
            trainer.test(built.task, datamodule=built.data, verbose=False)
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1}
    except BaseException as error:
        tracker.finish(error)
        raise
    tracker.finish()
    return RunResult(run_id=run_id, metrics=metrics, operative=operative)
