import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression

from components.data.synthetic import SyntheticClassification, SyntheticRegression


def test_classification_splits_and_info():
    data = SyntheticClassification(n_samples=1000, n_features=6, n_classes=3, n_informative=3)
    sizes = {split: len(data.split(split)["x"]) for split in ("train", "val", "test")}
    assert sizes == {"train": 700, "val": 150, "test": 150}
    assert data.info() == {"in_features": 6, "num_classes": 3}
    train = data.split("train")
    assert train["x"].dtype == torch.float32 and train["y"].dtype == torch.long
    assert sorted(torch.unique(train["y"]).tolist()) == [0, 1, 2]
    # standardized with train statistics
    assert torch.allclose(train["x"].mean(0), torch.zeros(6), atol=1e-5)


def test_classification_batches_are_dicts():
    data = SyntheticClassification(n_samples=200, batch_size=32)
    batch = next(iter(data.train_dataloader()))
    assert set(batch) == {"x", "y"}
    assert batch["x"].shape == (32, 8) and batch["y"].shape == (32,)


def test_classification_is_seeded():
    a = SyntheticClassification(n_samples=100, seed=3).load()
    b = SyntheticClassification(n_samples=100, seed=3).load()
    c = SyntheticClassification(n_samples=100, seed=4).load()
    assert np.array_equal(a["x"], b["x"]) and np.array_equal(a["y"], b["y"])
    assert not np.array_equal(a["x"], c["x"])


def test_classification_noise_flips_labels():
    # flip_y=0.5 gives half the labels a random class, so even the best linear model is ~75% right.
    scores = []
    for noise in (0.0, 0.5):
        pool = SyntheticClassification(n_samples=2000, n_informative=4, noise=noise, seed=1).load()
        scores.append(LogisticRegression().fit(pool["x"], pool["y"]).score(pool["x"], pool["y"]))
    assert scores[0] > 0.95
    assert 0.65 < scores[1] < 0.8


@pytest.mark.parametrize("n_targets, y_shape, info", [
    (1, (140,), {"in_features": 8, "num_targets": 1}),
    (3, (140, 3), {"in_features": 8, "num_targets": 3}),
])
def test_regression_shapes_and_info(n_targets, y_shape, info):
    data = SyntheticRegression(n_samples=200, n_targets=n_targets)
    train = data.split("train")
    assert train["y"].shape == y_shape and train["y"].dtype == torch.float32
    assert data.info() == info


def test_standardize_target_uses_train_statistics():
    data = SyntheticRegression(n_samples=400, n_targets=2, noise=0.3, standardize_target=True)
    raw = SyntheticRegression(n_samples=400, n_targets=2, noise=0.3)
    train = data.split("train")["y"].double()
    assert train.mean(0).abs().max() < 1e-5 and torch.allclose(train.std(0, unbiased=False), torch.ones(2, dtype=torch.float64))
    restored = data.split("test")["y"].double() * torch.from_numpy(data.target_std) + torch.from_numpy(data.target_mean)
    assert torch.allclose(restored, raw.split("test")["y"].double(), atol=1e-5)


def test_standardize_target_of_class_labels_is_an_error():
    with pytest.raises(ValueError, match="standardize_target applies to float"):
        SyntheticClassification(n_samples=100, standardize_target=True).split("train")


def test_regression_noise_is_relative_to_unit_signal():
    clean = SyntheticRegression(n_samples=5000, noise=0.0).load()["y"]
    noisy = SyntheticRegression(n_samples=5000, noise=0.5).load()["y"]
    assert clean.std() == pytest.approx(1.0, abs=1e-5)
    assert (noisy - clean).std() == pytest.approx(0.5, abs=0.02)


@pytest.mark.parametrize(
    "cls, kwargs, message",
    [
        (SyntheticClassification, {"n_informative": 9}, "n_informative must be in [1, n_features=8], got 9"),
        (SyntheticClassification, {"n_classes": 5, "n_informative": 2},
         "n_classes must be <= 2**n_informative = 4, got 5"),
        (SyntheticRegression, {"val_fraction": 0.6, "test_fraction": 0.4},
         "val_fraction + test_fraction must be < 1, got 0.6 + 0.4"),
    ],
)
def test_synthetic_rejects_bad_values(cls, kwargs, message):
    with pytest.raises(ValueError) as error:
        cls(**kwargs)
    assert str(error.value) == message


@pytest.mark.parametrize("name, arguments, problems", [
    ("synthetic_classification", {"n_samples": 0, "n_classes": 1},
     {"n_samples": "must be >= 1, got integer 0", "n_classes": "must be >= 2, got integer 1"}),
    ("synthetic_classification", {"noise": 1.5}, {"noise": "must be >= 0 and <= 1, got number 1.5"}),
    ("synthetic_classification", {"batch_size": 0, "num_workers": -1},  # the base data module's ranges
     {"batch_size": "must be >= 1, got integer 0", "num_workers": "must be >= 0, got integer -1"}),
    ("synthetic_classification", {"val_fraction": 1.0}, {"val_fraction": "must be >= 0 and < 1, got number 1.0"}),
    ("synthetic_regression", {"n_targets": 0, "noise": -1.0},
     {"n_targets": "must be >= 1, got integer 0", "noise": "must be >= 0, got number -1.0"}),
    ("synthetic_classification", {"n_samples": 1, "n_classes": 2, "noise": 1.0, "batch_size": 1, "num_workers": 0,
                                  "val_fraction": 0.0}, {}),  # the edges are accepted
])
def test_synthetic_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("data", name, **arguments) == problems
