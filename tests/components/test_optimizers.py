"""The registered optimizers are torch's, with the ranges of their arguments in the signature."""

import pytest
import torch

from components.optim.optimizers import SGD, Adam, AdamW


@pytest.mark.parametrize("ours, theirs, arguments", [
    (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    (Adam, torch.optim.Adam, {"lr": 0.01, "betas": (0.8, 0.99), "amsgrad": True}),
    (AdamW, torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1}),
])
def test_steps_as_torch_does(ours, theirs, arguments):
    results = []
    for cls in (ours, theirs):
        torch.manual_seed(0)
        weight = torch.nn.Parameter(torch.randn(5))
        optimizer = cls([weight], **arguments)
        for _ in range(3):
            optimizer.zero_grad()
            (weight ** 2).sum().backward()
            optimizer.step()
        results.append(weight.detach().clone())
    assert torch.equal(*results)
    assert isinstance(ours([torch.nn.Parameter(torch.zeros(1))]), theirs)


@pytest.mark.parametrize("name, arguments, problems", [
    ("adam", {"lr": -1}, {"lr": "must be > 0, got integer -1"}),
    ("adam", {"lr": 0.0, "eps": -1e-8}, {"lr": "must be > 0, got number 0.0", "eps": "must be >= 0, got number -1e-08"}),
    ("adamw", {"betas": [0.9, 1.0]}, {"betas.1": "must be >= 0 and < 1, got number 1.0"}),
    ("sgd", {"momentum": -0.9, "weight_decay": -1}, {"momentum": "must be >= 0, got number -0.9",
                                                     "weight_decay": "must be >= 0, got integer -1"}),
    ("adamw", {"lr": 1e-12, "betas": [0.0, 0.0], "eps": 0.0, "weight_decay": 0.0}, {}),  # the edges are accepted
])
def test_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("optimizers", name, **arguments) == problems


def test_a_models_parameter_groups_scale_the_spec_lr_per_group() -> None:
    import functools

    from torch import nn

    from components.tasks.supervised import optimizers_config

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden, self.readout = nn.Linear(4, 8), nn.Linear(8, 2)

        def parameter_groups(self) -> list[dict]:
            return [{"params": list(self.hidden.parameters()), "lr_scale": 1.0, "name": "hidden"},
                    {"params": list(self.readout.parameters()), "lr_scale": 0.25, "weight_decay_scale": 0.0,
                     "name": "readout"}]

    class Task(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = Scaled()

    built = optimizers_config(Task(), functools.partial(torch.optim.AdamW, lr=0.02, weight_decay=0.1), None)
    by_name = {group["name"]: group for group in built.param_groups}
    assert by_name["hidden"]["lr"] == 0.02 and by_name["hidden"]["weight_decay"] == 0.1
    assert by_name["readout"]["lr"] == 0.005 and by_name["readout"]["weight_decay"] == 0.0
    assert "lr_scale" not in by_name["readout"]
    default_lr = optimizers_config(Task(), functools.partial(torch.optim.SGD), None)
    assert [group["lr"] for group in default_lr.param_groups] == [0.001, 0.00025]
