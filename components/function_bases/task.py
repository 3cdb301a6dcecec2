"""Basis learning: fit a basis (the model) to an objective by gradient steps, then test it on grids.

The model is a basis (`lie_basis`, or `fixed_basis` for a baseline evaluated with `phases:
[test]`); the objective (`basis_objectives` table) gives the loss and the test report; the data
gives full batches on uniform grids (components.function_bases.data).

Logged keys: `train/loss` per step and `train/orthonormality_error` every `log_every_n_steps`;
at test, for each test batch (one per grid size, suffix `_n<points per axis>`):
`test/orthonormality_error_n<N>`, max |Phi^T W Phi - I| over all M functions with the grid's
quadrature W, and each key of the objective's report (`test/captured_variance_n512`, ...); and
`test/generator_rank`, the largest numerical rank of the generator's matrix A(t) over t (2 x pairs
for `lie_basis`, 0 for `fixed_basis`), where the model gives it.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable

import lightning as L
import torch
from torch import Tensor, nn

from components.kinds import Kind
from components.tasks.supervised import optimizers_config

BasisObjective = Annotated[Any, Kind("basis_objectives")]


def orthonormality_error(values: Tensor, weights: Tensor) -> Tensor:
    """max_{m,k} |<phi_m, phi_k> - delta_mk| with the quadrature weights: 0 for an orthonormal basis."""
    gram = values.T @ (weights[:, None] * values)
    return (gram - torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device)).abs().max()


class BasisLearning(L.LightningModule):
    """Learns a basis by minimizing an objective's loss; tests orthonormality and the objective's
    report on every test grid.

    Args:
        model: The basis: evaluate(points, derivatives) -> (values, gradients), and `reference`.
        objective: loss(basis, batch) and report(basis, batch) (the `basis_objectives` table).
        optimizer: Factory called with the parameters; may be omitted for a test-only run (a
            fixed basis, `phases: [test]`).
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
    """

    def __init__(
        self,
        model: nn.Module,
        objective: BasisObjective,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        if not callable(getattr(model, "evaluate", None)) or not hasattr(model, "reference"):
            raise TypeError(f"model must be a basis (lie_basis, fixed_basis), got {type(model).__name__}")
        for method in ("loss", "report"):
            if not callable(getattr(objective, method, None)):
                raise TypeError(f"objective must be a basis objective, got {type(objective).__name__} without {method}")
        self.model: nn.Module = model
        self.objective = objective
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> Tensor:
        loss = self.objective.loss(self.model, batch)
        self.log("train/loss", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=1)
        if self.trainer.global_step % self.trainer.log_every_n_steps == 0:
            with torch.no_grad():
                values = self.model.evaluate(batch["points"])[0]
                self.log("train/orthonormality_error", orthonormality_error(values, batch["weights"]),
                         on_step=True, on_epoch=False, batch_size=1)
        return loss

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        suffix = batch["name"]
        values = self.model.evaluate(batch["points"])[0]
        self.log(f"test/orthonormality_error_{suffix}", orthonormality_error(values, batch["weights"]), batch_size=1)
        for key, value in self.objective.report(self.model, batch).items():
            self.log(f"test/{key}_{suffix}", value, batch_size=1)
        if callable(getattr(self.model, "generator_rank", None)):
            self.log("test/generator_rank", float(self.model.generator_rank()), batch_size=1)

    def configure_optimizers(self) -> Any:
        if self.optimizer_factory is None:
            raise ValueError("fitting a basis needs an `optimizer:` section (a test-only run says `phases: [test]`)")
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory)
