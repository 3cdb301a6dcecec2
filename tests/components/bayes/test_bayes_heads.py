"""components/bayes/heads.py, metrics.py, task.py: VBLL and last-layer Laplace heads, `with_head`,
calibration metrics and the `bayesian_classification` task's choices."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torchmetrics.functional.classification import multiclass_calibration_error

from components.bayes.heads import LaplaceHead, posthoc_heads, variational_heads, with_head
from components.bayes.metrics import ExpectedCalibrationError, NegativeLogLikelihood
from components.models.mlp import MLP


def test_with_head_replaces_the_output_layer_and_keeps_the_other_names() -> None:
    torch.manual_seed(0)
    model = with_head(MLP(8, 3, hidden=(6,)), LaplaceHead(6, 4), "net.2")
    assert model(torch.randn(5, 8)).shape == (5, 4)
    assert {"net.0.weight", "net.2.linear.weight"} <= set(model.state_dict())
    assert posthoc_heads(model) and not variational_heads(model)
    with pytest.raises(ValueError, match="no submodule"):
        with_head(MLP(8, 3, hidden=(6,)), LaplaceHead(6, 4), "net.7")


def _separable(n: int = 200, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 5, generator=g) + 2.0 * nn.functional.one_hot(y, 5).float()
    return x, y


def test_laplace_head_is_linear_until_fitted_then_a_softened_predictive() -> None:
    torch.manual_seed(0)
    x, y = _separable()
    head = LaplaceHead(5, 3)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(200):
        opt.zero_grad()
        nn.functional.cross_entropy(head(x), y).backward()
        opt.step()
    logits = head(x).detach()
    assert torch.allclose(logits, head.linear(x).detach())
    delta = head.fit_posterior(x, y)  # empirical Bayes
    assert delta > 0 and math.isfinite(delta)
    log_probs = head(x).detach()
    assert torch.allclose(log_probs.exp().sum(1), torch.ones(len(x)), atol=1e-5)
    # the probit predictive is less confident than the point estimate's softmax, never more
    assert (log_probs.exp().max(1).values <= logits.softmax(1).max(1).values + 1e-6).all()
    x_val, y_val = _separable(100, seed=1)
    tuned = head.fit_posterior(x, y, x_val, y_val)  # validation grid search: a grid point
    grid = torch.logspace(-4, 4, LaplaceHead.GRID, dtype=torch.float64).tolist()
    assert any(math.isclose(tuned, g, rel_tol=1e-9) for g in grid)


def test_laplace_head_with_a_huge_prior_precision_is_the_point_estimate() -> None:
    x, y = _separable()
    head = LaplaceHead(5, 3, prior_precision=1e12)
    head.fit_posterior(x, y)
    assert torch.allclose(head(x).detach(), head.linear(x).log_softmax(1).detach(), atol=1e-4)


def test_vbll_head_outputs_log_probabilities_and_its_elbo() -> None:
    pytest.importorskip("vbll")
    from components.bayes.heads import VBLLHead

    torch.manual_seed(0)
    head = VBLLHead(5, 3, parameterization="diagonal")
    x, y = _separable(50)
    out = head(x)
    assert torch.allclose(out.exp().sum(1), torch.ones(50), atol=1e-4)
    train_loss = head.variational_loss(y)
    head.eval()
    head(x)
    val_loss = head.variational_loss(y)
    assert train_loss.requires_grad and float(train_loss) != float(val_loss)
    assert variational_heads(nn.Sequential(nn.Linear(4, 5), head)) == [head]


def test_calibration_metrics_match_torchmetrics_and_cross_entropy() -> None:
    torch.manual_seed(0)
    logits, y = 3 * torch.randn(40, 4), torch.randint(0, 4, (40,))
    ece, nll = ExpectedCalibrationError(bins=10), NegativeLogLikelihood()
    for start in (0, 20):
        batch = {"y": y[start:start + 20]}
        ece.update(logits[start:start + 20], batch)
        nll.update(logits[start:start + 20], batch)
    expected = multiclass_calibration_error(logits.softmax(1), y, num_classes=4, n_bins=10, norm="l1")
    assert float(ece.compute()) == pytest.approx(float(expected), abs=1e-6)
    assert float(nll.compute()) == pytest.approx(float(nn.functional.cross_entropy(logits, y)), abs=1e-5)
    with pytest.raises(ValueError, match="C >= 2"):
        NegativeLogLikelihood().update(torch.randn(5), {"y": torch.zeros(5)})


def test_the_task_trains_a_variational_head_on_its_elbo_and_others_on_the_loss() -> None:
    pytest.importorskip("vbll")
    from components.bayes.heads import VBLLHead
    from components.bayes.task import BayesianClassification
    from components.losses.basic import CrossEntropy

    vbll_model = with_head(MLP(8, 3, hidden=(6,)), VBLLHead(6, 3), "net.2")
    with pytest.raises(ValueError, match="remove the `loss:` section"):
        BayesianClassification(vbll_model, torch.optim.Adam, loss=CrossEntropy())
    with pytest.raises(ValueError, match="give a `loss:` section"):
        BayesianClassification(MLP(8, 3, hidden=(6,)), torch.optim.Adam)
    task = BayesianClassification(vbll_model, torch.optim.Adam)
    batch = {"x": torch.randn(4, 8), "y": torch.tensor([0, 1, 2, 0])}
    task.log_step = lambda *args: None  # no trainer here
    loss = task._step(batch, "train")
    assert loss.requires_grad and loss.ndim == 0
