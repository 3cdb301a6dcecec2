"""Logging cadence of the supervised tasks (components/tasks/supervised.py): train metrics logged at
Lightning's logging interval are the value over the epoch's batches so far, the epoch-end value is
the whole epoch's, val/test values are over the whole split, and `log_train_metrics: step` adds each
batch's own value. Every expected number is computed by hand from the outputs the model produced."""

from __future__ import annotations

import functools

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import Logger

from components.data.synthetic import SyntheticClassification
from components.losses.basic import CrossEntropy
from components.metrics.standard import Accuracy
from components.models.mlp import MLP
from components.tasks.supervised import Classification

LOG_EVERY = 4  # 140 train rows / batch 16 = 9 batches per epoch: logging steps 3, 7 | 11, 15 | ...


class Recorder(Logger):
    """Keeps every (step, metrics) Lightning sends to a logger."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[int, dict[str, float]]] = []

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def version(self) -> int:
        return 0

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.rows.append((int(step or 0), dict(metrics)))

    def log_hyperparams(self, params: object, *args: object, **kwargs: object) -> None:
        pass

    def values(self, key: str) -> list[tuple[int, float]]:
        return [(step, metrics[key]) for step, metrics in self.rows if key in metrics]


def fit(log_train_metrics: str, log_every: int, epochs: int = 2):
    """Fit a tiny classifier, recording each training batch's outputs and targets as they were
    when the task updated its metrics (a forward hook on the model, in training mode only)."""
    L.seed_everything(0, verbose=False)
    data = SyntheticClassification(n_samples=200, batch_size=16)
    model = MLP(8, 2, (8,))
    task = Classification(model, CrossEntropy(), functools.partial(torch.optim.SGD, lr=0.5),
                          metrics={"accuracy": Accuracy()}, log_train_metrics=log_train_metrics)
    seen: list[tuple[torch.Tensor, int]] = []  # (hard labels == targets, epoch)
    batch_targets: list[torch.Tensor] = []

    class Targets(L.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            batch_targets.append(batch["y"])

    def hook(module, inputs, outputs):
        if module.training:
            seen.append(((outputs.argmax(1) == batch_targets[-1]).float(), task.current_epoch))

    model.register_forward_hook(hook)
    recorder = Recorder()
    trainer = L.Trainer(max_epochs=epochs, logger=recorder, log_every_n_steps=log_every, callbacks=[Targets()],
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        accelerator="cpu", num_sanity_val_steps=0)
    trainer.fit(task, datamodule=data)
    return task, data, trainer, recorder, seen


def running_accuracy(seen: list[tuple[torch.Tensor, int]], upto: int) -> float:
    """Accuracy over the batches of step `upto`'s epoch up to and including that step."""
    epoch = seen[upto][1]
    return float(torch.cat([hits for hits, e in seen[: upto + 1] if e == epoch]).mean())


def test_train_metrics_at_the_logging_interval_are_the_epoch_so_far():
    task, data, trainer, recorder, seen = fit("interval", LOG_EVERY)
    per_epoch = len(seen) // 2
    assert per_epoch == 9 and trainer.global_step == 18
    logged = recorder.values("train/accuracy")
    interval = [(step, value) for step, value in logged if (step + 1) % LOG_EVERY == 0]
    assert [step for step, _ in interval] == [3, 7, 11, 15]
    for step, value in interval:
        assert value == pytest.approx(running_accuracy(seen, step), abs=1e-6), step
    # epoch ends: the whole epoch's value (logged at the epoch's last step), then the next epoch restarts
    ends = [value for step, value in logged if (step + 1) % per_epoch == 0]
    assert ends == pytest.approx([running_accuracy(seen, per_epoch - 1), running_accuracy(seen, 2 * per_epoch - 1)], abs=1e-6)
    assert len(logged) == len(interval) + len(ends)
    assert float(trainer.callback_metrics["train/accuracy"]) == pytest.approx(ends[-1], abs=1e-6)
    assert [step for step, _ in recorder.values("train/loss")] == [3, 7, 11, 15]
    assert not recorder.values("train/accuracy_step")


def test_val_and_test_metrics_are_over_the_whole_split():
    task, data, trainer, recorder, seen = fit("interval", LOG_EVERY)
    val = recorder.values("val/accuracy")
    assert len(val) == 2  # one value per epoch; the last one is by the final weights
    trainer.test(task, datamodule=data, verbose=False)
    task.eval()
    for split, logged in (("val", val[-1][1]), ("test", float(trainer.callback_metrics["test/accuracy"]))):
        tensors = data.split(split)
        with torch.no_grad():
            hand = float((task(tensors["x"]).argmax(1) == tensors["y"]).float().mean())
        assert logged == pytest.approx(hand, abs=1e-6), split


def test_per_step_logging_when_chosen():
    task, data, trainer, recorder, seen = fit("step", 1)
    steps = recorder.values("train/accuracy_step")
    assert [step for step, _ in steps] == list(range(18))
    for step, value in steps:
        assert value == pytest.approx(float(seen[step][0].mean()), abs=1e-6), step
    # the epoch-end value still covers the whole epoch (forward keeps accumulating the epoch's state)
    final = float(trainer.callback_metrics["train/accuracy"])
    assert final == pytest.approx(running_accuracy(seen, 17), abs=1e-6)


def test_log_train_metrics_is_checked():
    with pytest.raises(ValueError, match="log_train_metrics must be 'interval' or 'step', got 'often'"):
        Classification(MLP(8, 2, (8,)), CrossEntropy(), torch.optim.SGD, log_train_metrics="often")


def test_declared_logged_metrics_are_what_the_task_logs() -> None:
    """`Classification.LOGGED_METRICS` (what `exp validate` checks a callback's `monitor` against,
    without torch) names exactly the keys a fit and test log."""
    from framework.validate import logged_metrics

    task, data, trainer, recorder, _ = fit("step", log_every=1, epochs=1)
    trainer.test(task, datamodule=data, verbose=False)
    logged = {key for _, metrics in recorder.rows for key in metrics if key != "epoch"}
    declared = logged_metrics(list(Classification.LOGGED_METRICS), {"metrics": [{"type": "accuracy"}]})
    assert logged == set(declared)
