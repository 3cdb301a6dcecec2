"""The Lightning side of tracking, apart from framework.tracking so that importing that module
(`exp compare`, `exp reproduce`) does not import Lightning."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.loggers import MLFlowLogger


class RunLogger(MLFlowLogger):
    """Lightning's MLflow logger, writing into a run the runner created. Lightning finalizes its
    loggers at the end of fit *and* of test; the runner, not Lightning, sets the final status.

    Args:
        already_logged: A resumed run's existing history, as counts of (metric, step)
            (`Tracker.logged_steps`). A metric at a step before the last one the run holds for
            it is dropped; at that last step, as many values as the run already holds there are
            dropped (Lightning logs `epoch` twice at an epoch's last step: after the train batch
            and after validation). Everything later is logged.
    """

    def __init__(self, *args: Any, already_logged: dict[tuple[str, int], int] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._already_logged = dict(already_logged or {})
        self._last_logged: dict[str, int] = {}
        for key, step in self._already_logged:
            self._last_logged[key] = max(step, self._last_logged.get(key, step))

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if self._last_logged:
            metrics = {k: v for k, v in metrics.items() if not self._logged_before(k, step)}
        if metrics:
            super().log_metrics(metrics, step)

    def _logged_before(self, key: str, step: int | None) -> bool:
        last = self._last_logged.get(key)
        if last is None or step is None or step > last:
            return False
        if step < last:
            return True
        remaining = self._already_logged.get((key, step), 0)
        self._already_logged[(key, step)] = max(0, remaining - 1)
        return remaining > 0

    def finalize(self, status: str = "success") -> None:
        if self._initialized and self._checkpoint_callback:
            self._scan_and_log_checkpoints(self._checkpoint_callback)
