import pytest
import torch
from torch import nn

from components.models.cnn import SmallCNN


@pytest.mark.parametrize(
    "kwargs, image, stages",
    [
        ({}, (1, 8, 8), 2),
        ({"channels": [4]}, (1, 8, 8), 1),
        ({"channels": [4, 4, 4, 4, 4]}, (1, 8, 8), 5),  # ceil-mode pooling: 8->4->2->1->1->1
        ({"kernel_size": 5, "dropout": 0.2}, (3, 28, 28), 2),
    ],
    ids=["digits", "one-stage", "deeper-than-image", "rgb-28"],
)
def test_cnn_output_shape(kwargs, image, stages):
    model = SmallCNN(in_channels=image[0], out_features=10, **kwargs)
    assert model(torch.randn(6, *image)).shape == (6, 10)
    assert sum(isinstance(m, nn.Conv2d) for m in model.modules()) == stages


def test_cnn_head_width_is_last_channel_count():
    model = SmallCNN(1, 4, channels=[3, 7])
    assert model.head[-1].in_features == 7
    assert model.head[-1].out_features == 4


def test_cnn_learns_a_batch():
    torch.manual_seed(0)
    model = SmallCNN(1, 2, channels=[8])
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 2, (16,))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    first = None
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(x), y)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5 * first


def test_cnn_rejects_flat_input():
    with pytest.raises(ValueError) as error:
        SmallCNN(1, 2)(torch.randn(3, 64))
    assert str(error.value) == "SmallCNN expects input of shape (N, C, H, W), got (3, 64)"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kernel_size": 4}, "kernel_size must be an odd integer >= 1, got 4"),
    ],
)
def test_cnn_rejects_bad_values(kwargs, message):
    args = {"in_channels": 1, "out_features": 2, **kwargs}
    with pytest.raises(ValueError) as error:
        SmallCNN(**args)
    assert str(error.value) == message


@pytest.mark.parametrize("arguments, problems", [
    ({"in_channels": 0, "out_features": 0}, {"in_channels": "must be >= 1, got integer 0",
                                             "out_features": "must be >= 1, got integer 0"}),
    ({"channels": []}, {"channels": "must have at least 1 item(s), got list []"}),
    ({"kernel_size": -1}, {"kernel_size": "must be >= 1, got integer -1"}),
    ({"dropout": -0.1}, {"dropout": "must be >= 0 and < 1, got number -0.1"}),
    ({"in_channels": 1, "channels": [1], "kernel_size": 1, "dropout": 0.0}, {}),  # the edges are accepted
])
def test_cnn_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("models", "small_cnn", **arguments) == problems
