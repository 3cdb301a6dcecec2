"""The merging family (components/merging/): the symmetry transforms keep an MLP's function,
weight matching (scipy's linear_sum_assignment) undoes a known permutation, Sinkhorn gives a
doubly stochastic matrix, the learned alignments keep both endpoints' functions (one_sided leaves
endpoint a untouched), and `lmc_barrier` on a pair whose b is a permuted and rescaled copy of a
finds no barrier after alignment and one without it (< 5 s)."""

from __future__ import annotations

import pytest
import torch

from components.merging.lmc import LMCBarrier
from components.merging.pair import EndpointPair
from components.merging.symmetry import (learn_alignment, mlp_apply, mlp_layers, permutation_matrix, sinkhorn,
                                         transform, weight_matching)


def _pair(seed: int = 0) -> EndpointPair:
    torch.manual_seed(seed)
    return EndpointPair(6, 3, (16, 12))


def _random_transform(layers, seed: int):
    gen = torch.Generator().manual_seed(seed)
    sizes = [w.shape[0] for w, _ in layers[:-1]]
    perms = [permutation_matrix(torch.randperm(n, generator=gen)) for n in sizes]
    scales = [torch.rand(n, generator=gen) * 2 + 0.25 for n in sizes]
    return perms, scales


def test_permutation_and_positive_scaling_keep_the_function() -> None:
    layers = mlp_layers(_pair().a)
    x = torch.randn(50, 6)
    perms, scales = _random_transform(layers, 1)
    moved = transform(layers, perms, scales)
    assert torch.allclose(mlp_apply(moved, x), mlp_apply(layers, x), atol=1e-5)
    assert not torch.allclose(moved[0][0], layers[0][0])
    assert torch.allclose(mlp_apply(layers, x), _pair().a(x), atol=1e-6)


def test_weight_matching_undoes_a_known_permutation() -> None:
    a = mlp_layers(_pair().a)
    perms, _ = _random_transform(a, 2)
    b = transform(a, perms, None)
    found = weight_matching(a, b)
    aligned = transform(b, found, None)
    for (wa, ba), (wb, bb) in zip(a, aligned):
        assert torch.allclose(wa, wb) and torch.allclose(ba, bb)


def test_sinkhorn_is_doubly_stochastic() -> None:
    p = sinkhorn(torch.randn(7, 7), iters=200)
    assert torch.allclose(p.sum(0), torch.ones(7), atol=1e-4) and torch.allclose(p.sum(1), torch.ones(7), atol=1e-4)


@pytest.mark.parametrize("sides", ["one_sided", "dual"])
def test_learned_alignments_keep_both_functions(sides: str) -> None:
    pair = _pair()
    a, b = mlp_layers(pair.a), mlp_layers(pair.b)
    x, y = torch.randn(64, 6), torch.randint(0, 3, (64,))
    ta, tb = learn_alignment(a, b, x, y, sides, weight_matching(a, b), steps=5, lr=0.1, batch_size=32,
                             alphas_per_step=2, init_logit=1.0, temperature=1.0, sinkhorn_iters=10, scale=True, seed=0)
    assert torch.allclose(mlp_apply(ta, x), mlp_apply(a, x), atol=1e-4)
    assert torch.allclose(mlp_apply(tb, x), mlp_apply(b, x), atol=1e-4)
    if sides == "one_sided":
        assert all(torch.equal(w, v) for (w, _), (v, _) in zip(ta, a))


def test_lmc_barrier_of_a_permuted_copy() -> None:
    pair = _pair()
    perms, scales = _random_transform(mlp_layers(pair.a), 3)
    moved = transform(mlp_layers(pair.a), perms, scales)
    with torch.no_grad():
        for m, (w, v) in zip([m for m in pair.b.modules() if isinstance(m, torch.nn.Linear)], moved):
            m.weight.copy_(w)
            m.bias.copy_(v)
    x = torch.randn(200, 6)
    y = pair.a(x).argmax(-1)
    splits = {"train": {"x": x, "y": y}, "test": {"x": x, "y": y}}
    none = LMCBarrier(align="none")(pair, splits)
    matched = LMCBarrier(align="weight_matching")(pair, splits)
    assert none["barrier"] > 0.01 and none["loss_a00"] == pytest.approx(none["loss_a10"], abs=1e-5)
    assert matched["barrier"] < none["barrier"] and matched["function_change"] < 1e-4
    dual = LMCBarrier(align="dual", steps=3)(pair, splits)
    assert set(dual) >= {"barrier", "loss_a05", "excess_a05", "min_accuracy", "endpoint_loss"}
    assert dual["barrier"] >= 0 and dual["function_change"] < 1e-4


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="align"):
        LMCBarrier(align="both")
    with pytest.raises(ValueError, match="train"):
        EndpointPair(4, 2, (8,), train="c")
    with pytest.raises(TypeError, match="endpoint_pair"):
        LMCBarrier(align="none")(torch.nn.Linear(2, 2), {"train": {}, "test": {}})


def test_only_the_trained_member_gets_gradients() -> None:
    pair = _pair()
    pair.active = "b"
    pair(torch.randn(4, 6)).sum().backward()
    assert all(p.grad is None for p in pair.a.parameters())
    assert all(p.grad is not None for p in pair.b.parameters())
