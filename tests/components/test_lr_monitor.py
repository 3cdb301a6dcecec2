"""components/callbacks/lr_monitor.py: Lightning's learning-rate monitor under `train/...` keys."""

import lightning as L
import pytest
import torch

from components.callbacks.lr_monitor import LearningRateMonitor, metric_key


@pytest.mark.parametrize(("lightning", "ours"), [
    ("lr-AdamW", "train/lr"),
    ("lr-AdamW/pg2", "train/lr.pg2"),
    ("lr-AdamW/encoder", "train/lr.encoder"),
    ("lr-SGD-1", "train/lr.1"),
    ("lr-Adam-momentum", "train/momentum"),
    ("lr-AdamW-1/pg2-momentum", "train/momentum.1.pg2"),
    ("lr-Adam-weight_decay", "train/weight_decay"),
    ("warmup", "train/warmup"),          # a scheduler config's own name
    ("train/lr_custom", "train/lr_custom"),
])
def test_metric_key(lightning: str, ours: str) -> None:
    assert metric_key(lightning) == ours


class Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=0.01)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)}


def test_a_fit_logs_train_lr() -> None:
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2)
    logged: list[dict] = []

    class Recorder(L.pytorch.loggers.logger.DummyLogger):
        def log_metrics(self, metrics, step=None):
            logged.append(dict(metrics))

    trainer = L.Trainer(max_epochs=2, callbacks=[LearningRateMonitor(log_momentum=True)], logger=Recorder(),
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tiny(), data)
    keys = {k for entry in logged for k in entry}
    assert {"train/lr", "train/momentum"} <= keys and not any(k.startswith("lr-") for k in keys)
    assert [e["train/lr"] for e in logged if "train/lr" in e] == pytest.approx([0.01, 0.005])
    assert "train/lr" in trainer.callback_metrics and "lr-AdamW" not in trainer.callback_metrics
