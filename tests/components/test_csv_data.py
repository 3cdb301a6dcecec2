import pandas as pd
import pytest
import torch

from components.data.csv import CSVTable


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "people.csv"
    pd.DataFrame({
        "age": [25, 32, 47, 51, 62, 23, 38, 44, 29, 55],
        "city": ["b", "a", "c", "a", "b", "c", "a", "b", "c", "a"],
        "income": ["high", "low", "low", "high", "mid", "low", "mid", "high", "low", "mid"],
        "sex": ["m", "f", "f", "m", "m", "f", "m", "f", "f", "m"],
        "score": [1.5, 2.0, 0.5, 3.0, 2.5, 1.0, 0.0, 4.0, 1.0, 2.0],
    }).to_csv(path, index=False)
    return path


def make(path, **kwargs):
    args = {"path": str(path), "features": ["age", "city"], "target": "income",
            "val_fraction": 0.0, "test_fraction": 0.0, "standardize": False}
    return CSVTable(**{**args, **kwargs})


def test_csv_one_hot_and_label_encoding(table):
    data = make(table, group="sex")
    arrays = data.load()
    assert data.feature_names == ["age", "city_a", "city_b", "city_c"]
    assert arrays["x"][:3].tolist() == [[25, 0, 1, 0], [32, 1, 0, 0], [47, 0, 0, 1]]
    assert data.target_classes == ["high", "low", "mid"]
    assert arrays["y"].tolist() == [0, 1, 1, 0, 2, 1, 2, 0, 1, 2]
    assert data.group_classes == ["f", "m"]
    assert arrays["group"].tolist() == [1, 0, 0, 1, 1, 0, 1, 0, 0, 1]


def test_csv_info_and_batches(table):
    data = make(table, group="sex", batch_size=4)
    assert data.info() == {"in_features": 4, "num_classes": 3}
    batch = next(iter(data.train_dataloader()))
    assert set(batch) == {"x", "y", "group"}
    assert batch["x"].shape == (4, 4) and batch["group"].dtype == torch.long


def test_csv_regression_target(table):
    data = make(table, target="score", task="regression")
    y = data.split("train")["y"]
    assert y.dtype == torch.float32
    assert sorted(y.tolist()) == sorted([1.5, 2.0, 0.5, 3.0, 2.5, 1.0, 0.0, 4.0, 1.0, 2.0])
    assert data.info() == {"in_features": 4, "num_targets": 1}


def test_csv_is_read_at_load_not_construction(tmp_path):
    make(tmp_path / "later.csv")  # no error yet


def test_csv_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError) as error:
        make(path).load()
    assert str(error.value) == f"CSVTable: no such file '{path}' (resolved to {path.resolve()})"


@pytest.mark.parametrize("kwargs, column", [
    ({"features": ["age", "town"]}, "town"),
    ({"target": "label"}, "label"),
    ({"group": "race"}, "race"),
])
def test_csv_missing_column(table, kwargs, column):
    with pytest.raises(ValueError) as error:
        make(table, **kwargs).load()
    assert str(error.value) == (
        f"CSVTable: column '{column}' not in {table}; available columns: age, city, income, sex, score"
    )


def test_csv_regression_needs_numeric_target(table):
    with pytest.raises(ValueError) as error:
        make(table, task="regression").load()
    assert str(error.value) == "CSVTable: task 'regression' needs a numeric target, column 'income' is not numeric"


def test_csv_missing_values(tmp_path):
    path = tmp_path / "holes.csv"
    path.write_text("a,b,y\n1,,0\n2,3,1\n")
    with pytest.raises(ValueError) as error:
        make(path, features=["a", "b"], target="y").load()
    assert str(error.value) == f"CSVTable: columns with missing values in {path}: b"


def test_csv_features_name_a_column(argument_problems):
    assert argument_problems("data", "csv_table", features=[]) == {
        "features": "must have at least 1 item(s), got list []"}
    assert argument_problems("data", "csv_table", features=["age"]) == {}


@pytest.mark.parametrize("kwargs, message", [
    ({"target": "age"}, "a column may be used once among features, target and group, got ['age'] twice"),
])
def test_csv_rejects_bad_arguments(table, kwargs, message):
    with pytest.raises(ValueError) as error:
        make(table, **kwargs)
    assert str(error.value) == message
