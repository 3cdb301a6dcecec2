"""components/scaling/coordinate_check.py: the RMS change of layer outputs after a few steps."""

from __future__ import annotations

import functools

import lightning as L
import pytest
import torch

from components.scaling.coordinate_check import CoordinateCheck, delta_rms, probe_outputs
from components.scaling.parametrization import MuP
from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM
from components.tasks.supervised import optimizers_config


def test_delta_rms_by_hand() -> None:
    assert delta_rms(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([1.0, 0.0, 3.0, 0.0])) == pytest.approx(
        (20 / 4) ** 0.5, rel=1e-12)   # differences 0, 2, 0, 4


def model() -> CausalLM:
    torch.manual_seed(0)
    return CausalLM(vocab_size=9, mixers=[functools.partial(SoftmaxAttention, n_heads=2)], d_model=16, n_layers=2,
                    max_len=6, parametrization=MuP(base_width=8))


def test_probe_reads_every_mixer_and_the_logits_and_keeps_the_mode() -> None:
    lm = model().train()
    x = torch.randint(0, 9, (3, 6))
    outputs = probe_outputs(lm, x)
    assert sorted(outputs) == ["blocks.0.mixer", "blocks.1.mixer", "logits"]
    assert outputs["blocks.0.mixer"].shape == (3, 6, 16) and torch.equal(outputs["logits"], lm.eval()(x))
    assert not outputs["logits"].requires_grad


class _Logger(L.pytorch.loggers.logger.Logger):
    """Records what is sent to it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, dict]] = []

    name, version = "record", 0

    def log_metrics(self, metrics: dict, step: int | None = None) -> None:
        self.calls.append((step, dict(metrics)))

    def log_hyperparams(self, params: object, *args: object, **kwargs: object) -> None:
        pass


class _Task(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = model()

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(self.model(batch["x"]).flatten(0, 1), batch["y"].flatten())

    def configure_optimizers(self):
        return optimizers_config(self, functools.partial(torch.optim.Adam, lr=0.01), None)


def test_callback_logs_the_change_after_the_given_steps() -> None:
    g = torch.Generator().manual_seed(0)
    batches = [{"x": torch.randint(0, 9, (2, 6), generator=g), "y": torch.randint(0, 9, (2, 6), generator=g)}
               for _ in range(5)]
    task, check = _Task(), CoordinateCheck(steps=3)
    start = probe_outputs(task.model, batches[0]["x"])
    sent = _Logger()
    trainer = L.Trainer(max_steps=5, callbacks=[check], logger=sent, log_every_n_steps=50, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    trainer.fit(task, train_dataloaders=torch.utils.data.DataLoader(batches, batch_size=None))
    logged = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("coord/")}
    # the loggers got them once, at step 3, though Lightning's logging interval (50) never came
    assert [(step, sorted(m)) for step, m in sent.calls if any(k.startswith("coord/") for k in m)] == [(3, sorted(logged))]
    assert sorted(logged) == ["coord/delta_rms.blocks.0.mixer", "coord/delta_rms.blocks.1.mixer",
                              "coord/delta_rms.logits"]
    assert all(v > 0 for v in logged.values())
    # measured after step 3, not at the end (step 5): the final model has moved further
    final = delta_rms(probe_outputs(task.model, batches[0]["x"])["logits"], start["logits"])
    assert logged["coord/delta_rms.logits"] != pytest.approx(final, rel=1e-3)
