"""Full-GGN Laplace: GGN, evidence, empirical Bayes and predictive variance against brute force."""

import math

import pytest
import torch
from torch.func import functional_call

from components.bayes.laplace import FullLaplace, output_jacobians
from components.models.mlp import MLP


def _flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def _set_flat(model, theta):
    with torch.no_grad():
        for p, value in zip(model.parameters(), theta.split([p.numel() for p in model.parameters()])):
            p.copy_(value.view_as(p))


def test_ggn_of_a_linear_softmax_model_is_the_exact_hessian():
    torch.manual_seed(0)
    model = MLP(4, 3, hidden=[]).double()
    x, y = torch.randn(30, 4, dtype=torch.float64), torch.randint(0, 3, (30,))
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]

    def loss(theta):
        parts = theta.split([s.numel() for s in shapes])
        params = {n: p.view(s) for n, p, s in zip(names, parts, shapes)}
        return torch.nn.functional.cross_entropy(functional_call(model, params, (x,)), y, reduction="sum")

    hessian = torch.autograd.functional.hessian(loss, _flat_params(model))
    torch.testing.assert_close(FullLaplace.fit(model, x, y).ggn, hessian, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("delta", [0.01, 1.0, 30.0])
def test_laplace_evidence_of_a_linear_gaussian_model_is_the_exact_evidence(delta):
    """For y = Phi theta + noise with a Gaussian prior, Laplace at the MAP is exact."""
    torch.manual_seed(0)
    n, d, sigma = 25, 3, 0.5
    x = torch.randn(n, d, dtype=torch.float64)
    y = x @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.3 + sigma * torch.randn(n, dtype=torch.float64)
    phi = torch.cat([x, torch.ones(n, 1, dtype=torch.float64)], 1)  # MLP params: weight, then bias
    precision = phi.T @ phi / sigma**2 + delta * torch.eye(d + 1, dtype=torch.float64)
    model = MLP(d, 1, hidden=[]).double()
    _set_flat(model, torch.linalg.solve(precision, phi.T @ y / sigma**2))
    laplace = FullLaplace.fit(model, x, y, likelihood="regression", sigma_noise=sigma)
    covariance = sigma**2 * torch.eye(n, dtype=torch.float64) + phi @ phi.T / delta
    exact = torch.distributions.MultivariateNormal(torch.zeros(n, dtype=torch.float64), covariance).log_prob(y)
    assert float(laplace.log_evidence(delta)) == pytest.approx(float(exact), abs=1e-9)


def _trained_mlp():
    torch.manual_seed(0)
    x = torch.randn(60, 3, dtype=torch.float64)
    y = (x[:, 0] * x[:, 1] > 0).long()
    model = MLP(3, 2, hidden=[6]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(100):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model, x, y


def test_empirical_bayes_finds_the_maximum_of_the_evidence():
    model, x, y = _trained_mlp()
    laplace = FullLaplace.fit(model, x, y)
    delta = laplace.optimize_prior_precision()
    grid = torch.logspace(-4, 4, 20001, dtype=torch.float64)
    values = laplace.log_evidence(grid)
    best = float(grid[values.argmax()])
    assert float(laplace.log_evidence(delta)) >= float(values.max()) - 1e-12
    assert delta == pytest.approx(best, rel=2e-3)
    # MacKay's fixed point: effective number of parameters = delta * |theta|^2
    effective = float((laplace.eigenvalues / (laplace.eigenvalues + delta)).sum())
    assert effective == pytest.approx(delta * laplace.theta_sq_norm, rel=1e-10)


def test_predictive_variance_is_the_linearized_covariance_diagonal():
    model, x, y = _trained_mlp()
    laplace = FullLaplace.fit(model, x, y)
    x_test = torch.randn(7, 3, dtype=torch.float64)
    jac = output_jacobians(model, x_test)  # (7, 2, P)
    covariance = torch.linalg.inv(laplace.ggn + 0.5 * torch.eye(laplace.num_params, dtype=torch.float64))
    brute = torch.einsum("ncp,pq,ncq->nc", jac, covariance, jac)
    torch.testing.assert_close(laplace.predictive_variance(x_test, 0.5, chunk_size=3), brute, rtol=1e-9, atol=0)


def test_empirical_bayes_stops_at_the_bounds():
    model, x, y = _trained_mlp()
    laplace = FullLaplace.fit(model, x, y)
    delta = laplace.optimize_prior_precision()
    assert laplace.optimize_prior_precision(low=10 * delta, high=100 * delta) == 10 * delta
    assert laplace.optimize_prior_precision(low=delta / 100, high=delta / 10) == delta / 10
    with pytest.raises(ValueError, match=r"^need 0 < low < high, got low=1.0, high=1.0$"):
        laplace.optimize_prior_precision(low=1.0, high=1.0)


def _transported_and_canonical(gamma: float = 0.3):
    from components.bayes.rescaling import canonical_gammas, parameter_scales, relu_rescale

    torch.manual_seed(0)
    x = torch.randn(60, 3, dtype=torch.float64)
    y = (x[:, 0] * x[:, 1] > 0).long()
    model = MLP(3, 2, hidden=[5, 4]).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(100):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    gammas = canonical_gammas(model, gamma)
    scales = parameter_scales(model, gammas)
    transported = FullLaplace.fit(model, x, y).transported(scales)
    canonical = FullLaplace.fit(relu_rescale(model, gammas), x, y)
    return transported, canonical, scales, x


def test_transported_prior_is_the_isotropic_prior_at_the_rescaled_point():
    """The abstract's equivalence: Laplace at the canonical representative = the canonical
    isotropic prior carried back as a precision field delta D^2; evidence and predictive agree."""
    transported, canonical, scales, x = _transported_and_canonical()
    delta = transported.optimize_prior_precision()
    assert delta == pytest.approx(canonical.optimize_prior_precision(), rel=1e-10)
    assert float(transported.log_evidence(delta)) == pytest.approx(float(canonical.log_evidence(delta)), abs=1e-9)
    x_test = torch.randn(7, 3, dtype=torch.float64)
    torch.testing.assert_close(transported.predictive_variance(x_test, delta),
                               canonical.predictive_variance(x_test, delta), rtol=1e-9, atol=0)


def test_transported_evidence_is_the_gaussian_prior_evidence_in_the_original_coordinates():
    """log Z = log p - delta/2 theta^T D^2 theta + 1/2 log det(delta D^2) - 1/2 log det(G + delta D^2)."""
    transported, _, scales, _ = _transported_and_canonical()
    theta = _flat_params(transported.model)
    precision = 0.7 * scales.pow(2)
    brute = (transported.log_lik - 0.5 * float(theta @ (precision * theta)) + 0.5 * float(precision.log().sum())
             - 0.5 * float(torch.logdet(transported.ggn + torch.diag(precision))))
    assert float(transported.log_evidence(0.7)) == pytest.approx(brute, abs=1e-9)


@pytest.mark.parametrize("scales, message", [
    (torch.ones(3), "prior_scales must have shape (P,), got (3,)"),
    (None, "prior_scales must be finite and > 0, got min -1.0"),
], ids=["shape", "negative"])
def test_transported_rejects_bad_scales(scales, message):
    model, x, y = _trained_mlp()
    laplace = FullLaplace.fit(model, x, y)
    if scales is None:
        scales = torch.ones(laplace.num_params, dtype=torch.float64)
        scales[0] = -1.0
    with pytest.raises(ValueError) as error:
        laplace.transported(scales)
    assert str(error.value) == message.replace("(P,)", f"({laplace.num_params},)")


def test_matches_laplace_torch_when_installed():
    """Cross-check with laplace-torch's full GGN (ASDL backend), which the project does not depend on."""
    laplace_torch = pytest.importorskip("laplace")
    from torch.utils.data import DataLoader, TensorDataset

    model, x, y = _trained_mlp()
    ours = FullLaplace.fit(model, x, y)
    theirs = laplace_torch.Laplace(model, "classification", subset_of_weights="all", hessian_structure="full",
                                   backend=laplace_torch.curvature.AsdlGGN)
    theirs.fit(DataLoader(TensorDataset(x, y), batch_size=32))
    theirs.prior_precision = 0.7
    torch.testing.assert_close(theirs.H, ours.ggn, rtol=1e-10, atol=1e-10)
    assert float(theirs.log_marginal_likelihood()) == pytest.approx(float(ours.log_evidence(0.7)), abs=1e-8)
