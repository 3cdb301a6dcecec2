"""Post-hoc analysis: no training; a registered analysis reads a trained model and the data.

The paradigm of "train, then analyze" papers (gamma_laplace, scalebits, lmc_dual_merge, ...): an
earlier stage trains the model, this task receives it (the framework loads the earlier stage's
weights before test) and runs in the test loop only (`phases: [test]`). At the start of the test
loop it calls the analysis once on whole data splits, then logs each returned value as
`test/<name>`; the test batches themselves are not used.

Analysis contract (the `analyses` registry table): built with the spec's arguments, then called as
``analysis(model, splits) -> dict[str, float]``, where ``splits`` maps a split name ("train",
"val", "test") to that split's tensors as one batch dict ({"x", "y", ...}). An analysis names the
splits it needs in an attribute ``splits`` (default: train and test). Analyses run with autograd
enabled (Lightning's test loop runs under inference mode), must not modify the model they are
given (copy it), and return finite or infinite Python floats.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import lightning as L
import torch
from torch import nn

from components.kinds import Kind

Analysis = Annotated[Any, Kind("analyses")]
DEFAULT_SPLITS = ("train", "test")


def collect_splits(datamodule: Any, names: tuple[str, ...]) -> dict[str, dict[str, torch.Tensor]]:
    """Each named split as one dict of tensors: `datamodule.split(name)` where the data module
    has it (the in-memory ones do), else its `<name>_dataloader()` batches concatenated."""
    if datamodule is None:
        raise RuntimeError("posthoc_analysis needs a data module: call trainer.test(task, datamodule=...)")
    out: dict[str, dict[str, torch.Tensor]] = {}
    for name in names:
        if hasattr(datamodule, "split"):
            tensors = datamodule.split(name)
        else:
            hook = f"{name}_dataloader"
            # LightningDataModule declares every hook; only an overridden one provides the split.
            if getattr(type(datamodule), hook, None) in (None, getattr(L.LightningDataModule, hook, None)):
                raise ValueError(f"the data module has no '{name}' split")
            batches = list(getattr(datamodule, hook)())
            tensors = {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
        # Clones made outside inference mode can enter autograd (Jacobians, Hessians).
        out[name] = {k: v.clone() for k, v in tensors.items()}
    return out


class PosthocAnalysis(L.LightningModule):
    """Runs one analysis on a trained model in the test loop and logs its results as `test/<name>`.

    Args:
        model: The trained network (runtime: built from `model:`, weights loaded by the
            framework from the stage named in `init:`).
        analysis: The analysis node (`analyses` table), called as analysis(model, splits).
    """

    def __init__(self, model: nn.Module, analysis: Analysis) -> None:
        super().__init__()
        if not callable(analysis):
            raise ValueError(f"analysis must be callable as analysis(model, splits), got {type(analysis).__name__}")
        self.model = model
        self.analysis = analysis
        self.results: dict[str, float] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def training_step(self, batch: Any, batch_idx: int) -> None:
        raise RuntimeError(
            "task 'posthoc_analysis' does not train: run its stage with `phases: [test]` and load "
            "trained weights with `init: {stage: <training stage>}`"
        )

    def configure_optimizers(self) -> None:
        return None

    def run_analysis(self, datamodule: Any) -> dict[str, float]:
        """Call the analysis on the data module's splits; returns (and keeps) name -> float."""
        names = tuple(getattr(self.analysis, "splits", DEFAULT_SPLITS))
        with torch.inference_mode(False), torch.enable_grad():
            splits = collect_splits(datamodule, names)
            results = self.analysis(self.model, splits)
        if not isinstance(results, dict):
            raise TypeError(f"{type(self.analysis).__name__} must return dict[str, float], got {type(results).__name__}")
        self.results = {}
        for name, value in results.items():
            value = float(value)
            if math.isnan(value):
                raise ValueError(f"{type(self.analysis).__name__} returned NaN for '{name}'")
            self.results[name] = value
        return self.results

    def on_test_start(self) -> None:
        self.run_analysis(self.trainer.datamodule)

    def test_step(self, batch: Any, batch_idx: int) -> None:
        return None

    def on_test_epoch_end(self) -> None:
        for name, value in self.results.items():
            self.log(f"test/{name}", value)
