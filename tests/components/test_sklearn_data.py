import pytest
import torch

from components.data.sklearn import SklearnDataset

SPLITS = ("train", "val", "test")


def total_rows(data):
    return sum(len(data.split(split)["x"]) for split in SPLITS)


@pytest.mark.parametrize(
    "name, rows, info",
    [
        ("digits", 1797, {"in_features": 64, "num_classes": 10}),
        ("breast_cancer", 569, {"in_features": 30, "num_classes": 2}),
        ("wine", 178, {"in_features": 13, "num_classes": 3}),
        ("iris", 150, {"in_features": 4, "num_classes": 3}),
        ("diabetes", 442, {"in_features": 10, "num_targets": 1}),
    ],
)
def test_sklearn_dataset_sizes(name, rows, info):
    data = SklearnDataset(name)
    assert total_rows(data) == rows
    assert data.info() == info


def test_digits_as_images():
    data = SklearnDataset("digits", as_images=True)
    assert total_rows(data) == 1797
    assert data.info() == {"in_channels": 1, "num_classes": 10}
    x = data.split("train")["x"]
    assert x.shape[1:] == (1, 8, 8) and x.dtype == torch.float32
    assert float(x.min()) == 0.0 and float(x.max()) == 1.0  # pixel / 16, not standardized


def test_diabetes_target_is_float():
    y = SklearnDataset("diabetes").split("train")["y"]
    assert y.dtype == torch.float32 and y.ndim == 1


def test_as_images_rejected_for_tables():
    with pytest.raises(ValueError) as error:
        SklearnDataset("iris", as_images=True)
    assert str(error.value) == "as_images is only valid for image datasets (digits), got name 'iris'"


def test_unknown_name_rejected():
    with pytest.raises(ValueError) as error:
        SklearnDataset("mnist")
    assert str(error.value) == (
        "name must be one of ['breast_cancer', 'diabetes', 'digits', 'iris', 'wine'], got 'mnist'"
    )
