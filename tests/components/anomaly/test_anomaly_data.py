"""components/anomaly/data.py: anomaly data (synthetic collective manifold, sklearn classes as
anomalies, ODDS/ADBench files from a local folder) and the transductive protocol."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from components.anomaly.data import (
    ODDS_ENV,
    CollectiveManifold,
    ODDSFile,
    SklearnAnomalies,
    classes_as_anomalies,
    collective_manifold,
)

SPECS = Path(__file__).resolve().parents[3] / "specs" / "lpr_anomaly"


def test_collective_manifold_rows_labels_and_a_tight_off_manifold_cluster() -> None:
    x, y = collective_manifold(np.random.default_rng(0), n_normal=400, dim=12, manifold_dim=2, noise=0.0,
                               n_collective=30, cluster_spread=0.01, cluster_distance=3.0, n_scattered=10)
    assert x.shape == (440, 12) and y.tolist() == [0] * 400 + [1] * 40
    normal, cluster = x[:400], x[400:430]
    # the cluster is tight (spread 0.01) and its centre lies well off the normal rows (distance 3 from
    # its own manifold point)
    assert np.linalg.norm(cluster - cluster.mean(0), axis=1).max() < 0.1
    nearest = np.linalg.norm(normal - cluster.mean(0), axis=1).min()
    assert nearest > 1.0
    scattered = x[430:]
    assert np.linalg.norm(scattered - cluster.mean(0), axis=1).min() > 0.5  # not part of the cluster
    again, _ = collective_manifold(np.random.default_rng(0), 400, 12, 2, 0.0, 30, 0.01, 3.0, 10)
    assert np.array_equal(x, again)


def test_transductive_splits_are_one_shuffled_pool_and_standardized_once() -> None:
    data = CollectiveManifold(n_normal=200, dim=5, n_collective=20, n_scattered=5, seed=3, batch_size=64)
    train, test = data.split("train"), data.split("test")
    assert len(train["x"]) == 225 and np.array_equal(train["x"].numpy(), test["x"].numpy())
    assert np.array_equal(data.split("val")["y"].numpy(), test["y"].numpy())
    assert np.allclose(train["x"].numpy().mean(0), 0, atol=1e-5) and np.allclose(train["x"].numpy().std(0), 1, atol=1e-4)
    first = data.split("test")["y"][:64]
    assert 0 < int(first.sum()) < 64  # shuffled: the first batch mixes normal rows and anomalies
    assert data.info() == {"in_features": 5, "num_classes": 2}


def test_held_out_split_when_not_transductive() -> None:
    data = CollectiveManifold(n_normal=200, dim=5, n_collective=0, n_scattered=25, transductive=False,
                              val_fraction=0.0, test_fraction=0.2)
    assert [len(data.split(s)["x"]) for s in ("train", "val", "test")] == [180, 0, 45]


def test_a_manifold_without_anomalies_is_an_error() -> None:
    with pytest.raises(ValueError, match="n_collective \\+ n_scattered must be >= 1"):
        CollectiveManifold(n_collective=0, n_scattered=0)


def test_breast_cancer_benign_normal_and_down_sampled_malignant_anomalies() -> None:
    data = SklearnAnomalies(name="breast_cancer", normal_classes=[1], n_anomalies=40, seed=0)
    y = data.split("test")["y"].numpy()
    assert len(y) == 397 and int(y.sum()) == 40 and data.info()["in_features"] == 30
    other = SklearnAnomalies(name="breast_cancer", normal_classes=[1], n_anomalies=40, seed=1)
    assert not np.array_equal(np.sort(data.split("test")["x"].numpy(), 0), np.sort(other.split("test")["x"].numpy(), 0))


def test_classes_as_anomalies_rules() -> None:
    x = np.arange(10, dtype=float)[:, None]
    target = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    rows, y = classes_as_anomalies(x, target, [0, 3], [2], None, np.random.default_rng(0))
    assert rows[:, 0].tolist() == [0, 1, 2, 9, 5, 6, 7, 8] and y.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    rows, y = classes_as_anomalies(x, target, [2], None, 2, np.random.default_rng(0))  # others: 0, 1, 3
    assert y.tolist() == [0, 0, 0, 0, 1, 1] and set(rows[4:, 0]) <= {0, 1, 2, 3, 4, 9}
    with pytest.raises(ValueError, match=r"classes \[7\] are not in the data; its classes are \[0, 1, 2, 3\]"):
        classes_as_anomalies(x, target, [7], None, None, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_anomalies is 9 but the anomaly classes have 4 rows"):
        classes_as_anomalies(x, target, [0, 1, 3], None, 9, np.random.default_rng(0))
    with pytest.raises(ValueError, match="overlap"):
        classes_as_anomalies(x, target, [0], [0, 1], None, np.random.default_rng(0))


def _odds_arrays(n: int = 60, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = (np.arange(n) % 10 == 0).astype(float)[:, None]  # ODDS stores y as a column
    return rng.normal(size=(n, d)) + 4 * y, y


def test_odds_mat_and_adbench_npz_files_are_read(tmp_path: Path) -> None:
    from scipy.io import savemat

    x, y = _odds_arrays()
    savemat(tmp_path / "toy.mat", {"X": x, "y": y})
    np.savez(tmp_path / "toy2.npz", X=x, y=y.ravel())
    for name in ("toy", "toy2"):
        data = ODDSFile(name=name, root=str(tmp_path), seed=0)
        assert data.info()["in_features"] == 4
        got = data.split("train")
        assert len(got["x"]) == 60 and int(got["y"].sum()) == 6


def test_odds_file_missing_fails_at_build_naming_the_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ODDS_ENV, raising=False)
    with pytest.raises(FileNotFoundError) as error:
        ODDSFile(name="shuttle", root=str(tmp_path))
    assert str(error.value) == (
        f"anomaly benchmark set 'shuttle' not found (tried {tmp_path}/shuttle.mat and {tmp_path}/shuttle.npz). "
        "Nothing is downloaded: put the ODDS 'shuttle.mat' (odds.cs.stonybrook.edu) or ADBench 'shuttle.npz' file "
        f"in a folder and set data.root or ${ODDS_ENV} to it.")
    with pytest.raises(FileNotFoundError, match=r"data.root is null and \$EXPSPEC_ODDS_DIR is not set"):
        ODDSFile(name="shuttle")


def test_odds_file_with_bad_labels_is_an_error(tmp_path: Path) -> None:
    np.savez(tmp_path / "bad.npz", X=np.zeros((3, 2)), y=np.array([0, 2, 1]))
    with pytest.raises(ValueError, match=r"expected X \(N, d\) and y \(N,\) in \{0, 1\}"):
        ODDSFile(name="bad", root=str(tmp_path)).split("train")


def test_adbench_spec_fails_early_without_data_and_runs_with_it(tracked: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    from framework.runner import run

    monkeypatch.delenv(ODDS_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="anomaly benchmark set 'cardio' not found"):
        run(SPECS / "adbench.yaml")
    client = MlflowClient(tracked)
    failed = client.search_runs([client.get_experiment_by_name("lpr_anomaly").experiment_id],
                                order_by=["attributes.start_time DESC"], max_results=1)[0]
    # stopped while building, before any training: recorded FAILED with the message
    assert failed.info.status == "FAILED" and "not found" in failed.data.tags["expspec.error"]
    x, y = _odds_arrays(n=200, d=21)
    np.savez(tmp_path / "cardio.npz", X=x, y=y.ravel())
    monkeypatch.setenv(ODDS_ENV, str(tmp_path))
    result = run(SPECS / "adbench.yaml", ["trainer.max_epochs=2"])
    assert 0.0 <= result.metrics["test/anomaly_auroc"] <= 1.0
