import math

import pytest
import torch

from components.optim.schedulers import cosine_with_warmup, step_decay


def lrs(config, steps, base_lr=1.0):
    optimizer = config["scheduler"].optimizer
    seen = []
    for _ in range(steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        config["scheduler"].step()
    return seen


def make_optimizer(lr=1.0):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def test_cosine_with_warmup_values():
    config = cosine_with_warmup(make_optimizer(2.0), total_steps=6, warmup_steps=2, min_lr_ratio=0.1)
    assert config["interval"] == "step"
    expected = [0.0, 1.0] + [2.0 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * k / 4))) for k in range(4)] + [0.2, 0.2]
    assert lrs(config, 8) == pytest.approx(expected)
    assert expected[2] == pytest.approx(2.0) and expected[4] == pytest.approx(1.1)


def test_cosine_without_warmup_starts_at_base_lr_and_ends_at_zero():
    config = cosine_with_warmup(make_optimizer(), total_steps=4, interval="epoch")
    assert config["interval"] == "epoch"
    assert lrs(config, 6) == pytest.approx([1.0, 0.8535534, 0.5, 0.1464466, 0.0, 0.0])


def test_step_decay_values():
    config = step_decay(make_optimizer(), total_steps=10, step_size=2, gamma=0.5)
    assert config["interval"] == "epoch"
    assert isinstance(config["scheduler"], torch.optim.lr_scheduler.StepLR)
    assert lrs(config, 6) == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.25, 0.25])


@pytest.mark.parametrize("call, message", [
    (lambda o: cosine_with_warmup(o, 0), "total_steps must be >= 1, got 0"),
    (lambda o: cosine_with_warmup(o, 10, warmup_steps=11), "warmup_steps must be in [0, total_steps=10], got 11"),
    (lambda o: cosine_with_warmup(o, 10, interval="batch"), "interval must be one of ['step', 'epoch'], got 'batch'"),
])
def test_schedulers_reject_bad_values(call, message):
    with pytest.raises(ValueError) as error:
        call(make_optimizer())
    assert str(error.value) == message


@pytest.mark.parametrize("name, arguments, problems", [
    ("cosine", {"min_lr_ratio": 1.5, "warmup_steps": -1}, {"min_lr_ratio": "must be >= 0 and <= 1, got number 1.5",
                                                          "warmup_steps": "must be >= 0, got integer -1"}),
    ("cosine", {"min_lr_ratio": 1.0, "warmup_steps": 0}, {}),
    ("step", {"step_size": 0, "gamma": 0.0}, {"step_size": "must be >= 1, got integer 0",
                                              "gamma": "must be > 0 and <= 1, got number 0.0"}),
    ("step", {"step_size": 1, "gamma": 1.0}, {}),
])
def test_scheduler_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("schedulers", name, **arguments) == problems
