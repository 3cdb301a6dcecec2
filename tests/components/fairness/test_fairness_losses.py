"""Tests for components/fairness/losses.py (CvM dependence penalty and the HSIC baseline)."""

import pytest
import torch

from components.fairness.losses import HSIC, CvMDependence, cvm_index


def _batch(size: int, dependence: float, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    group = torch.randint(0, 2, (size,), generator=generator)
    score = torch.randn(size, generator=generator) + dependence * group
    return score, {"y": torch.zeros(size, dtype=torch.long), "group": group}


def test_cvm_index_of_separated_groups():
    group = torch.tensor([0] * 30 + [1] * 10)
    score = torch.cat([torch.linspace(0, 1, 30), torch.linspace(5, 6, 10)])
    # k-th of group 0: F0 = k/30, F1 = 0; k-th of group 1: F1 = k/10, F0 = 1.
    gaps = torch.cat([-torch.arange(1, 31) / 30, torch.arange(1, 11) / 10 - 1])
    expected = 6 * 0.25 * 0.75 * gaps.pow(2).mean()
    torch.testing.assert_close(cvm_index(score, group), expected)
    assert float(expected) == pytest.approx(0.375, abs=0.02)  # population value 2 p (1 - p)


@pytest.mark.parametrize("loss", [CvMDependence(regularization=0.02), HSIC()], ids=["cvm", "hsic"])
def test_penalty_small_when_independent_and_large_when_dependent(loss):
    # B = 256, the paper's tiny batch, at the default soft-rank strength.
    independent = [float(loss(*_batch(256, 0.0, seed))) for seed in range(5)]
    dependent = [float(loss(*_batch(256, 1.5, seed))) for seed in range(5)]
    assert max(independent) < 0.2 * min(dependent)


def test_hard_cvm_index_values_at_b2000():
    # Population value for N(0,1) vs N(1.5,1), p = 1/2: 6/4 * int (F1 - F0)^2 dF = 0.231.
    score, batch = _batch(2000, 0.0)
    assert float(cvm_index(score, batch["group"])) < 0.003
    score, batch = _batch(2000, 1.5)
    assert 0.18 < float(cvm_index(score, batch["group"])) < 0.28


def test_cvm_soft_estimate_tends_to_hard_ranks():
    score, batch = _batch(500, 1.0)
    hard = float(cvm_index(score, batch["group"]))
    soft = float(CvMDependence(regularization=1e-5)(score, batch))
    assert soft == pytest.approx(hard, rel=1e-3)


@pytest.mark.parametrize("shape", [(64, 2), (64, 1), (64,)])
@pytest.mark.parametrize("loss", [CvMDependence(), HSIC()], ids=["cvm", "hsic"])
def test_gradients_flow_and_push_groups_together(loss, shape):
    score, batch = _batch(64, 1.0)
    if shape == (64, 2):
        outputs = torch.stack([torch.zeros(64), score], dim=1)
    else:
        outputs = score.reshape(shape)
    outputs.requires_grad_(True)
    loss(outputs, batch).backward()
    grad = outputs.grad.reshape(64, -1)[:, -1]
    group = batch["group"]
    assert torch.isfinite(outputs.grad).all()
    # Descent lowers the scores of the higher-scoring group 1 and raises group 0's.
    assert grad[group == 1].sum() > 0 > grad[group == 0].sum()


@pytest.mark.parametrize("loss", [CvMDependence(), HSIC()], ids=["cvm", "hsic"])
def test_single_group_batch_gives_zero_with_grad(loss):
    outputs = torch.randn(16, 2, requires_grad=True)
    value = loss(outputs, {"y": torch.zeros(16, dtype=torch.long), "group": torch.ones(16, dtype=torch.long)})
    value.backward()
    assert float(value) == 0.0 and outputs.grad is not None


def test_cvm_three_groups_reduces_to_one_vs_rest_sum():
    group = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1, 2])
    score = torch.arange(9, dtype=torch.float64)
    value = float(cvm_index(score, group))
    assert 0.0 < value < 1.5


@pytest.mark.parametrize("loss, name", [(CvMDependence(), "cvm_dependence"), (HSIC(), "hsic")])
def test_missing_group_names_the_column(loss, name):
    with pytest.raises(KeyError, match=rf"{name} needs the sensitive attribute in batch\['group'\], but the batch "
                       r"has keys \['x', 'y'\]; the data module must provide a 'group' column"):
        loss(torch.randn(4, 2), {"x": torch.zeros(4, 3), "y": torch.zeros(4, dtype=torch.long)})


@pytest.mark.parametrize("make, message", [
    (lambda: CvMDependence(on="rank"), "on must be 'logit' or 'probability', got 'rank'"),
    (lambda: CvMDependence()(torch.zeros(4, 3), {"group": torch.zeros(4)}),
     r"cvm_dependence needs binary-classifier outputs of shape \(N, 2\), \(N, 1\) or \(N,\), got \(4, 3\)"),
])
def test_bad_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("name, arguments, problems", [
    ("cvm_dependence", {"regularization": 0.0}, {"regularization": "must be > 0, got number 0.0"}),
    ("hsic", {"bandwidth": -1.0}, {"bandwidth": "must be > 0, got number -1.0"}),
    ("hsic", {"bandwidth": None}, {}),
])
def test_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("losses", name, **arguments) == problems


def test_name_and_no_weight_follow_the_loss_contract():
    """The paper's lambda is the weight of the penalty's term in weighted_sum, not an argument."""
    assert CvMDependence.name == "cvm_dependence" and HSIC.name == "hsic"
    for loss in (CvMDependence, HSIC):
        with pytest.raises(TypeError, match="unexpected keyword argument 'weight'"):
            loss(weight=7.0)
