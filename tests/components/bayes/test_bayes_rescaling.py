"""ReLU rescalings preserve the function; gamma-canonicalization picks one point per orbit, for
every gamma of the family."""

import pytest
import torch

from components.bayes.rescaling import (
    canonical_gammas,
    gamma_canonicalize,
    hidden_widths,
    parameter_scales,
    random_gammas,
    relu_rescale,
)
from components.models.cnn import SmallCNN
from components.models.mlp import MLP

NETWORKS = {
    "mlp-1-hidden": (lambda: MLP(5, 3, hidden=[7]), (11, 5)),
    "mlp-3-hidden-dropout": (lambda: MLP(5, 2, hidden=[6, 4, 8], dropout=0.3), (11, 5)),
    "small-cnn": (lambda: SmallCNN(1, 4, channels=(3, 5)), (6, 1, 8, 8)),
}


def _network(name: str, seed: int = 0):
    torch.manual_seed(seed)
    make, shape = NETWORKS[name]
    return make().double().eval(), torch.randn(*shape, dtype=torch.float64)


def _max_param_diff(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max(float((p - q).abs().max()) for p, q in zip(a.parameters(), b.parameters()))


def _copies(model: torch.nn.Module, k: int = 4) -> list[torch.nn.Module]:
    generator = torch.Generator().manual_seed(1)
    return [relu_rescale(model, random_gammas(model, generator, log_std=1.5)) for _ in range(k)]


@pytest.mark.parametrize("name", NETWORKS)
def test_rescaling_preserves_the_function_but_not_the_parameters(name):
    model, x = _network(name)
    before = [p.clone() for p in model.parameters()]
    for copy in _copies(model):
        assert float((copy(x) - model(x)).abs().max()) < 1e-10
        assert _max_param_diff(copy, model) > 1e-2
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters())), "the original is untouched"


def test_rescaling_in_float32_preserves_the_function_to_1e_6():
    torch.manual_seed(0)
    model, x = MLP(5, 2, hidden=[16, 16]).eval(), torch.randn(20, 5)
    copy = relu_rescale(model, random_gammas(model, torch.Generator().manual_seed(0)))
    assert float((copy(x) - model(x)).abs().max()) < 1e-6


@pytest.mark.parametrize("gamma", [0.0, 0.25, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("name", NETWORKS)
def test_canonicalize_maps_the_whole_orbit_to_one_point(name, gamma):
    model, x = _network(name)
    canonical = gamma_canonicalize(model, gamma)
    assert float((canonical(x) - model(x)).abs().max()) < 1e-10
    for copy in _copies(model):
        assert _max_param_diff(gamma_canonicalize(copy, gamma), canonical) < 1e-9
    assert _max_param_diff(gamma_canonicalize(canonical, gamma), canonical) < 1e-12, "idempotent"


@pytest.mark.parametrize("gamma", [-0.3, 1.3])
@pytest.mark.parametrize("name", NETWORKS)
def test_canonicalize_beyond_the_family_still_maps_the_orbit_to_one_point(name, gamma):
    """gamma_laplace's grid runs 0.3 past [0, 1] on both sides: the sweep converges there too
    (two and three hidden layers, and the CNN), to one point per orbit."""
    model, x = _network(name)
    canonical = gamma_canonicalize(model, gamma)
    assert float((canonical(x) - model(x)).abs().max()) < 1e-10
    for copy in _copies(model):
        assert _max_param_diff(gamma_canonicalize(copy, gamma), canonical) < 1e-9


def test_canonicalize_far_beyond_the_family_stops_with_an_error():
    """At gamma = 2 the coupled sweep over three hidden layers does not settle: an error, not a point."""
    model, _ = _network("mlp-3-hidden-dropout")
    with pytest.raises(RuntimeError, match="did not converge"):
        canonical_gammas(model, 2.0, max_sweeps=500)


@pytest.mark.parametrize("gamma", [-0.3, 0.0, 0.3, 1.0, 1.3])
def test_gamma_canonical_point_solves_the_family_equation(gamma):
    """(1 - gamma) log|in| = gamma log|out| for every hidden unit: |in| = 1 at gamma = 0, |out| = 1 at 1."""
    model, _ = _network("mlp-3-hidden-dropout")
    linears = [m for m in gamma_canonicalize(model, gamma).modules() if isinstance(m, torch.nn.Linear)]
    for producer, consumer in zip(linears[:-1], linears[1:]):
        incoming = (producer.weight.pow(2).sum(1) + producer.bias.pow(2)).sqrt()
        outgoing = consumer.weight.pow(2).sum(0).sqrt()
        torch.testing.assert_close((1 - gamma) * incoming.log(), gamma * outgoing.log(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NETWORKS)
def test_parameter_scales_are_the_diagonal_of_the_rescaling(name):
    model, _ = _network(name)
    gammas = canonical_gammas(model, 0.3)
    flat = lambda net: torch.cat([p.detach().reshape(-1) for p in net.parameters()])  # noqa: E731
    scales = parameter_scales(model, gammas)
    torch.testing.assert_close(flat(model) * scales, flat(relu_rescale(model, gammas)), rtol=1e-14, atol=0)


def test_canonical_point_balances_every_unit_and_has_the_smallest_norm():
    model, _ = _network("mlp-3-hidden-dropout")
    canonical = gamma_canonicalize(model)
    linears = [m for m in canonical.modules() if isinstance(m, torch.nn.Linear)]
    for producer, consumer in zip(linears[:-1], linears[1:]):
        incoming = producer.weight.pow(2).sum(1) + producer.bias.pow(2)
        outgoing = consumer.weight.pow(2).sum(0)
        torch.testing.assert_close(incoming, outgoing, rtol=1e-9, atol=0)
    norm = sum(float(p.pow(2).sum()) for p in canonical.parameters())
    for copy in [model, *_copies(model)]:
        assert norm <= sum(float(p.pow(2).sum()) for p in copy.parameters()) + 1e-12


def test_linear_model_has_no_rescalings():
    model = MLP(4, 2, hidden=[]).double()
    assert hidden_widths(model) == []
    assert _max_param_diff(gamma_canonicalize(model), model) == 0.0


@pytest.mark.parametrize(
    "model, gammas, message",
    [
        (MLP(3, 2, hidden=[4], activation="gelu"), [torch.ones(4)],
         "ReLU rescaling needs ReLU activations between the layers; GELU is not positively homogeneous"),
        (torch.nn.Linear(3, 2), [],
         "ReLU rescaling supports the models 'mlp' (activation relu) and 'small_cnn', got Linear"),
        (MLP(3, 2, hidden=[4, 5]), [torch.ones(4)],
         "gammas must hold one tensor per hidden layer (2), got 1"),
        (MLP(3, 2, hidden=[4]), [torch.ones(5)], "gammas[0] must have shape (4,), got (5,)"),
        (MLP(3, 2, hidden=[4]), [torch.tensor([1.0, 0.0, 1.0, 1.0])],
         "gammas[0] must be finite and > 0, got min 0.0"),
    ],
    ids=["gelu", "not-a-supported-model", "too-few-layers", "wrong-width", "zero-scale"],
)
def test_rescale_rejects_with_a_message(model, gammas, message):
    with pytest.raises(ValueError) as error:
        relu_rescale(model, gammas)
    assert str(error.value) == message


@pytest.mark.parametrize("kwargs, message", [
    ({"gamma": float("nan")}, "gamma must be a finite number, got nan"),
    ({"gamma": float("inf")}, "gamma must be a finite number, got inf"),
    ({"tol": 0.0}, "tol must be > 0, got 0.0"),
], ids=["gamma-nan", "gamma-inf", "tol"])
def test_canonical_gammas_rejects_with_a_message(kwargs, message):
    with pytest.raises(ValueError) as error:
        canonical_gammas(MLP(3, 2, hidden=[4]), **kwargs)
    assert str(error.value) == message
