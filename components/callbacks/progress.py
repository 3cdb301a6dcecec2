"""Progress bar that suits where the run's output goes."""

from __future__ import annotations

import sys

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
