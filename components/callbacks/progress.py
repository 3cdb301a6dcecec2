"""Progress that suits where the run's output goes: a bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import sys
from typing import Any

from lightning.pytorch.callbacks import Callback, RichProgressBar, TQDMProgressBar
from components.types import NonNegativeInt


def progress_bar(refresh_rate: NonNegativeInt = 1) -> Callback:
    """A rich progress bar on an interactive terminal, a tqdm bar otherwise.

    Rich redraws in place, which is pleasant on a terminal but fills log files (SLURM, CI,
    `exp run ... > log`) with control sequences; tqdm degrades to plain lines there. Rich is
    also optional (the `dev` extra), so without it the tqdm bar is used everywhere.

    Args:
        refresh_rate: Update the bar every this many batches; 0 disables the bar.
    """
    if sys.stderr is not None and sys.stderr.isatty():
        try:
            import rich  # noqa: F401
        except ImportError:
            pass
        else:
            return RichProgressBar(refresh_rate=refresh_rate)
    return TQDMProgressBar(refresh_rate=refresh_rate)


class ProgressLines(Callback):
    """Plain progress lines on stderr for output that is not a terminal (a log file, CI, a pipe),
    where a progress bar would be one long line or nothing: at every `every`-th of the planned
    training steps (`trainer.max_steps`, else the estimated steps of `max_epochs`),
    `step 60/300 (20%)  epoch 2  train/loss=0.5312  4.1s`.

    Args:
        every: How many lines a fit prints (about), at evenly spaced steps.
    """

    def __init__(self, every: int = 10) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.every = every
        self._total = 0
        self._next = 0
        self._start = 0.0

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        import time

        total = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else trainer.estimated_stepping_batches
        self._total = int(total) if total and total != float("inf") else 0
        self._next = trainer.global_step + self._interval()
        self._start = time.perf_counter()

    def _interval(self) -> int:
        return max(1, self._total // self.every) if self._total else 100

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        import time

        step = trainer.global_step
        if step < self._next:
            return
        self._next = step + self._interval()
        of = f"/{self._total} ({100 * step // self._total}%)" if self._total else ""
        loss = trainer.callback_metrics.get("train/loss")
        shown = f"  train/loss={float(loss):.4g}" if loss is not None else ""
        print(f"step {step}{of}  epoch {trainer.current_epoch}{shown}  {time.perf_counter() - self._start:.1f}s",
              file=sys.stderr, flush=True)
