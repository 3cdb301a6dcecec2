"""components/elm/budget.py: the exact parameter count and the budget allocator."""

from __future__ import annotations

import pytest
import torch

from components.callbacks.parameter_count import trainable_parameters
from components.elm.budget import allocate, parameter_count
from components.elm.network import ELMBudgetNetwork, ELMNetwork


def test_parameter_count_by_hand() -> None:
    # N=2, k_e=3, K=5, d_m=2, n_out=4: connections 5 * (1 + 3) = 20; per neuron 2*2*3 + 3 + 3*2 + 1 + 4
    # = 26, twice = 52; readout bias 4: 76.
    assert parameter_count(2, 3, 5, 2, 4) == 76


@pytest.mark.parametrize(("n", "k_e", "k_c", "connections", "memory", "classes"), [
    (1, 1, 1, None, 1, 2), (5, 3, 4, None, 2, 9), (7, 8, 3, 23, 4, 5), (16, 16, 16, None, 4, 9), (3, 2, 1, 13, 3, 7),
])
def test_built_network_has_exactly_the_counted_parameters(n, k_e, k_c, connections, memory, classes) -> None:
    model = ELMNetwork(6, classes, num_neurons=n, k_e=k_e, k_c=k_c, connections=connections, memory_units=memory)
    total = connections if connections is not None else n * k_c
    assert trainable_parameters(model) == parameter_count(n, k_e, total, memory, classes)


@pytest.mark.parametrize("budget", [3000, 5000, 10000, 20000])
@pytest.mark.parametrize("k_e", [1, 2, 4, 8, 16])
def test_allocation_matches_the_budget_and_the_built_model(budget: int, k_e: int) -> None:
    split = allocate(budget, k_e, 8, in_features=32, out_features=9, memory_units=4)
    assert split.residual == budget - parameter_count(split.num_neurons, k_e, split.connections, 4, 9)
    assert abs(split.residual) <= 3 and abs(split.k_c - 8) <= 0.25 * 8
    if budget >= 10000 and k_e <= 16:
        assert split.residual == 0  # these are matched exactly
    model = ELMBudgetNetwork(32, 9, budget, k_e=k_e, k_c=8, memory_units=4)
    assert trainable_parameters(model) == budget - model.allocation.residual


def test_allocation_states_what_it_cannot_match() -> None:
    # k_e = 32 at P = 3000: each connection costs 33 and each neuron 9 * 32 + 22 = 310, so no N in
    # the connectivity window reaches 3000 exactly; the closest is 11 under (stated, not hidden).
    split = allocate(3000, 32, 8, in_features=32, out_features=9, memory_units=4)
    assert (split.num_neurons, split.connections, split.residual) == (5, 44, -11)
    assert split.parameters == 3011


def test_allocation_keeps_complexity_and_trades_neurons_for_it() -> None:
    splits = [allocate(10000, k_e, 8, 32, 9, 4) for k_e in (1, 4, 16)]
    assert [s.k_e for s in splits] == [1, 4, 16]
    assert splits[0].num_neurons > splits[1].num_neurons > splits[2].num_neurons


def test_a_budget_below_one_neuron_is_refused() -> None:
    with pytest.raises(ValueError, match=r"budget 50 is below one neuron with k_e=8, k_c=8 \(\d+ parameters\)"):
        allocate(50, 8, 8, 32, 9, 4)
