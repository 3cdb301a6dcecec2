import pytest
import torch
from torch import nn

from components.models.mlp import MLP


@pytest.mark.parametrize(
    "kwargs, n_linear",
    [
        ({}, 2),
        ({"hidden": []}, 1),
        ({"hidden": [32, 16, 8]}, 4),
        ({"hidden": (5,), "activation": "gelu", "dropout": 0.5}, 2),
    ],
    ids=["default", "linear", "deep", "gelu-dropout"],
)
def test_mlp_output_shape_and_depth(kwargs, n_linear):
    model = MLP(in_features=8, out_features=3, **kwargs)
    assert model(torch.randn(7, 8)).shape == (7, 3)
    assert sum(isinstance(m, nn.Linear) for m in model.modules()) == n_linear


def test_mlp_single_output_keeps_column():
    assert MLP(4, 1)(torch.randn(5, 4)).shape == (5, 1)


def test_mlp_layer_widths_and_activation():
    model = MLP(6, 2, hidden=[10, 4], activation="tanh")
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(6, 10), (10, 4), (4, 2)]
    assert sum(isinstance(m, nn.Tanh) for m in model.modules()) == 2


def test_mlp_dropout_only_in_training():
    model = MLP(4, 2, hidden=[64], dropout=0.5).eval()
    x = torch.randn(3, 4)
    assert torch.equal(model(x), model(x))
    assert any(isinstance(m, nn.Dropout) for m in model.modules())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"activation": "sigmoid"}, "activation must be one of ['gelu', 'relu', 'tanh'], got 'sigmoid'"),
    ],
)
def test_mlp_rejects_bad_values(kwargs, message):
    args = {"in_features": 4, "out_features": 2, **kwargs}
    with pytest.raises(ValueError) as error:
        MLP(**args)
    assert str(error.value) == message


@pytest.mark.parametrize("arguments, problems", [
    ({"in_features": 0, "out_features": -1}, {"in_features": "must be >= 1, got integer 0",
                                              "out_features": "must be >= 1, got integer -1"}),
    ({"hidden": [8, 0]}, {"hidden.1": "must be >= 1, got integer 0"}),
    ({"in_features": 8.0}, {"in_features": "expected an integer >= 1, got number 8.0"}),
    ({"dropout": 1.0}, {"dropout": "must be >= 0 and < 1, got number 1.0"}),
    ({"in_features": 1, "out_features": 1, "hidden": [1], "dropout": 0.0}, {}),  # the edges are accepted
])
def test_mlp_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("models", "mlp", **arguments) == problems
