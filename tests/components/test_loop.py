"""components/tasks/loop.py: a plain-loop task is stepped once per batch, Lightning counts its steps."""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader

from components.tasks.loop import PlainLoop


class Summing(PlainLoop):
    """Adds each batch to a buffer; its step size is 1 / (t + 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(1))
        self.seen: list[int] = []
        self.after: list[int] = []

    def loop_tensors(self) -> list[torch.Tensor]:
        return [self.total]

    def advance(self, batch: torch.Tensor, t: int) -> None:
        assert not torch.is_grad_enabled()
        self.total += batch
        self.seen.append(t)

    def step_size(self, t: int) -> float:
        return 1.0 / (t + 1)

    def after_advance(self, done: int) -> None:
        self.after.append(done)


def test_each_batch_is_one_loop_step_and_max_steps_counts_them() -> None:
    task = Summing()
    trainer = L.Trainer(max_epochs=1, max_steps=3, logger=False, enable_progress_bar=False,
                        enable_model_summary=False, enable_checkpointing=False, accelerator="cpu")
    trainer.fit(task, DataLoader([torch.tensor(float(i)) for i in range(1, 6)], batch_size=None))
    assert task.seen == [0, 1, 2] and task.after == [1, 2, 3] and trainer.global_step == 3
    assert task.total.item() == 6.0  # 1 + 2 + 3
    assert task.optimizers().param_groups[0]["lr"] == 1.0 / 3
