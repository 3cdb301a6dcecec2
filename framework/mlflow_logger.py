"""The Lightning side of tracking, apart from framework.tracking so that importing that module
(`exp compare`, `exp reproduce`) does not import Lightning."""

from __future__ import annotations

from lightning.pytorch.loggers import MLFlowLogger


class RunLogger(MLFlowLogger):
    """Lightning's MLflow logger, writing into a run the runner created. Lightning finalizes its
    loggers at the end of fit *and* of test; the runner, not Lightning, sets the final status."""

    def finalize(self, status: str = "success") -> None:
        if self._initialized and self._checkpoint_callback:
            self._scan_and_log_checkpoints(self._checkpoint_callback)
