"""components/anomaly/task.py and detectors.py: reconstruction scoring, the size check, and the
classical detector task run through Lightning."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch import nn

from components.anomaly.data import CollectiveManifold
from components.anomaly.detectors import isolation_forest, one_class_svm
from components.anomaly.metrics import AnomalyAUROC
from components.anomaly.task import GroupMeans, OutlierDetector, ReconstructionAnomaly, reconstruction_scores


def test_reconstruction_scores_by_hand() -> None:
    x = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    x_hat = torch.tensor([[1.0, 0.0], [3.0, -1.0]])
    assert reconstruction_scores(x_hat, x).tolist() == [2.0, 5.0]          # (0 + 4) / 2, (9 + 1) / 2
    assert reconstruction_scores(x_hat, x, "absolute").tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"output \(2, 1\) must have the input's shape \(2, 2\)"):
        reconstruction_scores(x_hat[:, :1], x)


def test_group_means_split_normal_rows_and_anomalies() -> None:
    means = GroupMeans()
    means.update(torch.tensor([1.0, 3.0, 10.0]), torch.tensor([0, 0, 1]))
    means.update(torch.tensor([2.0]), torch.tensor([0]))
    assert means.means() == {"score_normal": 2.0, "score_anomaly": 10.0}


@pytest.mark.parametrize("model_args, expected", [
    ({"type": "mlp", "in_features": 20, "out_features": 20}, []),
    ({"type": "mlp", "in_features": 20, "out_features": 2}, [("out_features", "is 2 but the data has 20 features (an autoencoder reconstructs its input)")]),
    ({"type": "precision_reduced", "model": {"type": "mlp", "in_features": 30, "out_features": 20}},
     [("model.in_features", "is 30 but the data has 20 features (an autoencoder reconstructs its input)")]),
], ids=["ok", "not-an-autoencoder", "wrapped"])
def test_check_data_reads_through_wrappers(model_args: dict, expected: list) -> None:
    assert ReconstructionAnomaly.check_data({"in_features": 20, "num_classes": 2}, model_args) == expected


def test_training_an_autoencoder_lowers_the_loss_and_logs_group_means() -> None:
    L.seed_everything(0)
    data = CollectiveManifold(n_normal=300, dim=6, n_collective=20, n_scattered=10, batch_size=64)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
    task = ReconstructionAnomaly(model=model, optimizer=lambda p: torch.optim.Adam(p, lr=1e-2), metrics={"auroc": AnomalyAUROC()})
    x = data.split("train")["x"]
    before = float(task(x).mean())
    trainer = L.Trainer(max_epochs=15, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0)
    trainer.fit(task, datamodule=data)
    results = trainer.test(task, datamodule=data, verbose=False)[0]
    assert float(task(x).mean()) < 0.5 * before
    assert 0.0 <= results["test/auroc"] <= 1.0
    assert results["test/score_anomaly"] > results["test/score_normal"] > 0


def test_outlier_detector_fits_on_train_and_scores_test() -> None:
    data = CollectiveManifold(n_normal=300, dim=6, n_collective=0, n_scattered=20, batch_size=64)
    task = OutlierDetector(detector=isolation_forest(n_estimators=50, seed=0), metrics={"auroc": AnomalyAUROC()})
    trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    results = trainer.test(task, datamodule=data, verbose=False)[0]
    assert results["test/auroc"] > 0.9  # 0.94 measured; with the sign of score_samples kept it would be ~0.06
    with pytest.raises(RuntimeError, match="run it with `phases: \\[test\\]`"):
        task.training_step({}, 0)


def test_detectors_are_unfitted_sklearn_estimators_with_the_spec_arguments() -> None:
    forest = isolation_forest(n_estimators=7, max_samples=32, seed=3)
    assert (forest.n_estimators, forest.max_samples, forest.random_state) == (7, 32, 3)
    assert isolation_forest().max_samples == "auto"
    svm = one_class_svm(nu=0.1)
    assert (svm.nu, svm.gamma, svm.kernel) == (0.1, "scale", "rbf")
    with pytest.raises(ValueError, match="detector object has no fit or score_samples"):
        OutlierDetector(detector=object())
