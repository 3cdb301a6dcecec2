"""components/callbacks/parameter_count.py: trainable parameters, each tensor once."""

from __future__ import annotations

from torch import nn

from components.callbacks.parameter_count import ParameterCount, trainable_parameters


def test_counts_trainable_tensors_once() -> None:
    shared = nn.Linear(3, 2)                               # 8 parameters
    model = nn.Sequential(shared, nn.ReLU(), shared, nn.Linear(2, 5))   # + 15
    assert trainable_parameters(model) == 23
    model[3].bias.requires_grad_(False)
    assert trainable_parameters(model) == 18


def test_logs_under_its_key() -> None:
    logged = {}

    class Module(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = nn.Linear(4, 1)
            self.head = nn.Linear(100, 100)               # not the task's model: not counted

        def log(self, key, value, **kwargs) -> None:
            logged[key] = value

    ParameterCount().on_test_epoch_end(None, Module())
    assert logged == {"model/trainable_parameters": 5.0}
