"""The checkpoint `exp resume` continues from: one file, rewritten often, whatever else the run saves."""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Checkpoint
from lightning.pytorch.trainer.connectors.logger_connector.result import _ResultMetric
from torchmetrics import Metric

from components.types import NonNegativeFloat, PositiveInt

RESUME_FILE = "resume.ckpt"


class ResumeCheckpoint(Checkpoint):
    """Writes `resume.ckpt` (the full training state: weights, optimizer, loop position, every
    callback's state, the train loader's position) every `every_n_steps` optimizer steps, at every
    epoch end and when fit ends; each write replaces the file atomically (a kill mid-write leaves
    the previous one). The runner adds one to every run that fits; a spec lists it only to set
    `every_n_steps`. Other checkpoint callbacks (a `checkpoint` keeping the best epoch by
    `val/loss`) are the user's, never what resume reads.

    The file also holds the random number generators' states (torch, numpy, python) at the save;
    they are restored when training starts again. A write mid-epoch also holds what the epoch has
    accumulated so far (`EpochSoFar`), so the epoch's train metrics cover all of its batches
    after a resume, as they would without one. Saves happen where Lightning's own ModelCheckpoint
    saves (after a batch, at epoch end after validation) and, like every Checkpoint callback,
    after the other callbacks' hooks, so the state of early stopping is that of the same step. The write at the end of fit records
    `fit_finished`: a run killed later (while testing) resumes with the final weights and no more
    training (`should_stop` is set again on load: Lightning does not store it, and a run that early
    stopping ended would otherwise train on).

    A write costs a file and a flush of the buffered metrics to the tracking store (a database
    write), so writes before the end of fit are also at least `min_seconds` apart: a run of short
    epochs or many small steps does not pay them often (hand-written Lightning writes once an
    epoch). Which checkpoint a run resumes from never changes its numbers, only how much it trains
    again after a kill.

    Args:
        every_n_steps: Optimizer steps between writes. Default: a twentieth of the steps the
            run is planned to take (Lightning's `estimated_stepping_batches`), at least 1; 1000
            when that is unbounded. At most 1/20 of the run (or `min_seconds`, if longer) is
            trained again after a kill.
        min_seconds: Least wall time between two writes before the one at the end of fit (0:
            every `every_n_steps` steps and every epoch end). Default: $EXPSPEC_RESUME_MIN_SECONDS,
            else MIN_SECONDS.
    """

    MIN_SECONDS = 10.0
    FILE = RESUME_FILE  # what `exp resume` looks for in a run's checkpoints folder

    def __init__(self, every_n_steps: PositiveInt | None = None, min_seconds: NonNegativeFloat | None = None) -> None:
        if every_n_steps is not None and every_n_steps < 1:
            raise ValueError(f"every_n_steps must be >= 1 or null, got {every_n_steps}")
        if min_seconds is None:
            min_seconds = float(os.environ.get("EXPSPEC_RESUME_MIN_SECONDS", self.MIN_SECONDS))
        if not min_seconds >= 0:
            raise ValueError(f"min_seconds must be >= 0, got {min_seconds}")
        self.every_n_steps, self.min_seconds = every_n_steps, min_seconds
        self._last_saved_time = -math.inf
        self.dirpath: Path | None = None  # first save: <logger's folder>/<experiment id>/<run id>/checkpoints
        self.fit_finished = False
        self._interval = every_n_steps or 1
        self._last_saved_step = -1
        self._rng_to_restore: dict[str, Any] | None = None
        self._epoch_to_restore: EpochSoFar | None = None
        self._mid_epoch = False

    @property
    def state_key(self) -> str:
        return "expspec.resume"

    def state_dict(self) -> dict[str, Any]:
        return {"fit_finished": self.fit_finished, "rng": rng_states()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.fit_finished = bool(state_dict.get("fit_finished", False))
        self._rng_to_restore = state_dict.get("rng")

    def path(self, trainer: Any) -> Path:
        """Where the file goes: the folder Lightning's ModelCheckpoint would use (runs_dir() for
        our MLflow logger), which is where `exp resume` looks for it."""
        if self.dirpath is None:
            logger = trainer.logger
            root = Path(getattr(logger, "save_dir", None) or trainer.default_root_dir)
            self.dirpath = (root / str(logger.name) / str(logger.version) / "checkpoints") if logger else root
        return Path(self.dirpath) / RESUME_FILE

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        planned = trainer.estimated_stepping_batches
        self._interval = self.every_n_steps or (max(1, math.ceil(planned / 20)) if math.isfinite(planned) else 1000)
        self._last_saved_step = trainer.global_step  # a resumed run starts where its checkpoint was
        self._last_saved_time = time.monotonic()  # a kill before the first write starts again from here
        if self._rng_to_restore is not None:  # dropout and augmentations draw what they drew before the kill
            set_rng_states(self._rng_to_restore)
            self._rng_to_restore = None
        if self._epoch_to_restore is not None:
            self._epoch_to_restore.restore_metrics(pl_module)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._epoch_to_restore is not None:
            self._epoch_to_restore.merge_logged(trainer)
        if trainer.global_step % self._interval == 0 and not _epoch_or_validation_follows(trainer):
            self._mid_epoch = True
            self._save(trainer)
            self._mid_epoch = False

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if self._mid_epoch:
            checkpoint["expspec.epoch_so_far"] = EpochSoFar.collect(trainer, pl_module)

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        saved = checkpoint.get("expspec.epoch_so_far")
        self._epoch_to_restore = EpochSoFar(**saved) if saved else None
        if checkpoint.get("callbacks", {}).get(self.state_key, {}).get("fit_finished"):
            trainer.should_stop = True  # fit restores the loops (the step test logs at) and stops

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._save(trainer, epoch_end=True)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.fit_finished = True
        self._save(trainer, final=True)

    def _save(self, trainer: Any, epoch_end: bool = False, final: bool = False) -> None:
        """Write the checkpoint through a temporary file and a rename (all ranks call
        save_checkpoint; rank zero writes). Not twice at one step, except at an epoch end or the
        end of fit; not within `min_seconds` of the last write, except at the end of fit (the
        clock is rank zero's, so that every rank takes the same decision)."""
        if trainer.sanity_checking or (trainer.global_step == self._last_saved_step and not (epoch_end or final)):
            return
        if not final and not self._time_to_write(trainer):
            return
        self._last_saved_step = trainer.global_step
        path = self.path(trainer)
        partial = path.with_name(path.name + ".partial")
        if trainer.is_global_zero:
            path.parent.mkdir(parents=True, exist_ok=True)
        trainer.save_checkpoint(partial)
        if trainer.is_global_zero:
            os.replace(partial, path)
            for logger in trainer.loggers:  # the run holds every metric up to the step a resume starts from
                if hasattr(logger, "checkpoint_written"):  # and, on a tracking server, the file
                    logger.checkpoint_written(path)
                elif hasattr(logger, "flush"):
                    logger.flush()


    def _time_to_write(self, trainer: Any) -> bool:
        """Whether `min_seconds` have passed since the last write (rank zero decides for all)."""
        now = time.monotonic()
        due = bool(trainer.strategy.broadcast(now - self._last_saved_time >= self.min_seconds, src=0))
        if due:
            self._last_saved_time = now
        return due


def _epoch_or_validation_follows(trainer: Any) -> bool:
    """Whether this batch ends the epoch or is followed by validation: a checkpoint written here
    would be read by Lightning as written after them (it skips the validation and the epoch-end
    hooks on restart, early stopping's check among them), so the write waits for the epoch end."""
    loop = trainer.fit_loop.epoch_loop
    return loop.batch_progress.is_last_batch or loop._should_check_val_fx(trainer.fit_loop._data_fetcher)


def rng_states() -> dict[str, Any]:
    """The global generators of torch (CPU and CUDA), numpy and Python, in types that
    `torch.load(weights_only=True)` reads back (Lightning loads checkpoints that way)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    states: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss),
        "python": random.getstate(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, gauss))
    random.setstate(states["python"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


@dataclass
class EpochSoFar:
    """What an epoch has accumulated before a mid-epoch checkpoint and Lightning does not save:
    the running sums behind `self.log(..., on_epoch=True)` values (`logged`: Lightning's result
    entries by key) and the states of the module's torchmetrics metrics (`metrics`: by module
    name; not in the model's state_dict). A resumed run starts the epoch's sums afresh; the saved
    ones are put back, the metrics' before the first batch and each logged value's right after
    the first batch logs it again (Lightning creates the entry then): saved + that batch's share
    is the sum the uninterrupted run computed, in the same order."""

    logged: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def collect(cls, trainer: Any, pl_module: Any) -> dict[str, Any]:
        logged = {key: {name: getattr(entry, name) for name in entry._defaults}
                  for key, entry in trainer.fit_loop.epoch_loop._results.items()
                  if isinstance(entry, _ResultMetric) and entry.is_tensor and entry.meta.on_epoch}
        metrics = {name: {**module.metric_state, "_update_count": module._update_count}
                   for name, module in pl_module.named_modules() if isinstance(module, Metric)}
        return {"logged": logged, "metrics": metrics}

    def restore_metrics(self, pl_module: Any) -> None:
        modules = dict(pl_module.named_modules())
        for name, state in self.metrics.items():
            metric = modules[name]
            for key, value in state.items():
                setattr(metric, key, value)
            metric._computed = None
        self.metrics = {}

    def merge_logged(self, trainer: Any) -> None:
        results = trainer.fit_loop.epoch_loop._results
        for key in [k for k in self.logged if k in results]:
            entry, saved = results[key], self.logged.pop(key)
            if entry.meta.is_max_reduction or entry.meta.is_min_reduction:
                entry.value = entry.meta.reduce_fx(saved["value"], entry.value)
            else:
                for name, value in saved.items():
                    setattr(entry, name, value + getattr(entry, name))
