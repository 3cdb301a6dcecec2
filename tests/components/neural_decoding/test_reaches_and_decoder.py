"""beemo's pieces: the simulated sessions (components/neural_decoding/reaches.py), the behaviour
decoder (decoder.py) and the decoding task's helpers (task.py)."""

from __future__ import annotations

import pytest
import torch

from components.neural_decoding.decoder import BehaviorDecoder
from components.neural_decoding.reaches import ReachSessions
from components.neural_decoding.task import rollout, shifted, velocity_r2


def _data(**kw) -> ReachSessions:
    data = ReachSessions(units=[8, 5], paired_trials=6, unpaired_trials=20, val_trials=4, test_trials=5,
                         iterations=6, batch_size=3, **kw)
    data.setup()
    return data


def test_pools_shapes_sessions_and_units() -> None:
    data = _data(paired_sessions=[0, 1])
    paired = data.split("paired")
    assert paired["behavior"].shape == (12, 24, 2) and paired["spikes"].shape == (12, 24, 8)
    assert paired["session"].tolist() == [0] * 6 + [1] * 6
    assert paired["spikes"][6:, :, 5:].abs().sum() == 0  # session 1 has 5 units
    assert data.split("test")["behavior"].shape == (5, 24, 2) and "spikes" not in data.split("unpaired")
    assert data.info() == {"sessions": 2, "max_units": 8, "steps": 24}


def test_shuffled_unpaired_keeps_the_velocities_and_loses_the_dynamics() -> None:
    matched, shuffled = _data(), _data(unpaired_dynamics="shuffled")
    a, b = matched.split("unpaired")["behavior"], shuffled.split("unpaired")["behavior"]
    assert torch.allclose(a.sort(dim=1).values, b.sort(dim=1).values)
    assert not torch.allclose(a, b)
    assert torch.equal(matched.split("test")["spikes"], shuffled.split("test")["spikes"])


def test_the_mixture_serves_unpaired_batches_without_spikes() -> None:
    batches = list(_data(pretrain_steps=2, paired_fraction=1.0).train_dataloader())
    assert ["spikes" in b for b in batches] == [False, False, True, True, True, True]
    with pytest.raises(ValueError, match="unpaired_trials"):
        ReachSessions(unpaired_trials=0, paired_fraction=0.5)


def test_decoder_is_causal_and_reads_spikes_only_when_given() -> None:
    torch.manual_seed(0)
    model = BehaviorDecoder(sessions=2, max_units=8, max_steps=24, d_model=16, layers=1)
    data = _data()
    test = data.split("test")
    x = shifted(test["behavior"])
    out = model(x, test["spikes"], test["session"])
    changed = x.clone()
    changed[:, 10:] += 1.0
    assert torch.allclose(model(changed, test["spikes"], test["session"])[:, :10], out[:, :10], atol=1e-6)
    assert not torch.allclose(model(x), out)
    model(x).sum().backward()
    assert all(p.grad is None for p in model.blocks[0].cross.parameters())


def test_r2_and_rollout() -> None:
    target = torch.randn(10, 7, 2)
    assert velocity_r2(target, target) == pytest.approx(1.0)
    assert velocity_r2(target.mean((0, 1)).expand_as(target), target) == pytest.approx(0.0, abs=1e-6)
    model = BehaviorDecoder(sessions=1, max_units=4, max_steps=7, d_model=8, layers=1)
    assert rollout(model, 7, 2, torch.zeros(3, 7, 4), torch.zeros(3, dtype=torch.long), 3).shape == (3, 7, 2)


class _Trainer:
    def __init__(self, datamodule):
        self.datamodule = datamodule


def test_task_trains_cross_attention_only_on_paired_batches_and_logs_the_scores() -> None:
    from components.neural_decoding.task import BehaviorDecoding

    data = _data(pretrain_steps=1)
    task = BehaviorDecoding(BehaviorDecoder(sessions=2, max_units=8, max_steps=24, d_model=16, layers=1),
                            optimizer=lambda p: torch.optim.Adam(p, lr=1e-3))
    task._trainer = _Trainer(data)  # what Lightning's trainer gives the hooks
    task.setup("fit")
    logged = {}
    task.log = lambda name, value, **k: logged.__setitem__(name, value)
    unpaired, paired = list(data.train_dataloader())[:2]
    task.training_step(unpaired, 0).backward()
    assert all(p.grad is None for p in task.model.blocks[0].cross.parameters())
    task.training_step(paired, 1).backward()
    assert all(p.grad is not None for p in task.model.blocks[0].cross.parameters())
    task.on_test_epoch_end()
    assert {f"{s}/{m}" for s in ("val", "test") for m in ("r2", "r2_prior", "r2_teacher")} <= set(logged)
    with pytest.raises(ValueError, match="sessions"):
        small = BehaviorDecoding(BehaviorDecoder(sessions=1, max_units=8), optimizer=None)
        small._trainer = _Trainer(data)
        small.setup("fit")
