"""components/procurement/task.py: training raises the procurement value, the test keys of the
mechanism, its baselines and its verifiers, and the checks on labels."""

from __future__ import annotations

import functools

import lightning as L
import pytest
import torch

from components.procurement.markets import RandomMarkets
from components.procurement.mechanisms import MenuNet, SequentialProportionalShare, UniformPosted
from components.procurement.task import MechanismDesign
from components.procurement.verifiers import BudgetCheck, MisreportGrid


def fit_and_test(task: MechanismDesign, steps: int) -> dict[str, float]:
    data = RandomMarkets(sellers=5, valuation="additive", batch_size=128, batches_per_epoch=max(steps, 1),
                         val_instances=200, test_instances=400, seed=0)
    trainer = L.Trainer(max_steps=steps if steps else -1, limit_train_batches=1.0 if steps else 0, logger=False,
                        enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False,
                        accelerator="cpu", num_sanity_val_steps=0)
    trainer.fit(task, datamodule=data)
    return {k: float(v) for k, v in trainer.test(task, datamodule=data, verbose=False)[0].items()}


def task() -> MechanismDesign:
    torch.manual_seed(0)
    return MechanismDesign(MenuNet(hidden=[16]), functools.partial(torch.optim.Adam, lr=1e-2),
                           baselines=[UniformPosted(), SequentialProportionalShare()],
                           verifiers=[BudgetCheck(), MisreportGrid(points=5, instances=50)])


def test_training_raises_the_value_and_logs_every_key() -> None:
    untrained = fit_and_test(task(), 0)
    trained = fit_and_test(task(), 60)
    assert trained["test/value"] > untrained["test/value"] + 0.05, (trained, untrained)
    assert trained["test/value_uniform_posted"] == untrained["test/value_uniform_posted"]  # same test markets
    best = max(trained["test/value_uniform_posted"], trained["test/value_sequential_proportional_share"])
    assert trained["test/value_best_baseline"] == best
    assert trained["test/value_ratio"] == pytest.approx(trained["test/value"] / best)
    assert trained["test/budget_violation_max"] == 0.0 and trained["test/misreport_gain_max"] == 0.0
    assert "test/budget_violation_max_uniform_posted" not in trained  # verify_baselines is off


def test_labels_must_differ() -> None:
    adam = functools.partial(torch.optim.Adam, lr=1e-2)
    with pytest.raises(ValueError, match=r"distinct labels .* repeated: \['uniform_posted'\]"):
        MechanismDesign(MenuNet(), adam, baselines=[UniformPosted(), UniformPosted()])
