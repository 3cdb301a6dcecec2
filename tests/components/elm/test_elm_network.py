"""components/elm/network.py: the ELM network's dynamics, wiring and readouts."""

from __future__ import annotations

import math
import re

import pytest
import torch

from components.elm.network import ELMNetwork, fan_ins, inverse_scaled_sigmoid, lecun_tanh, scaled_sigmoid


def test_fan_ins_spread_connections_evenly() -> None:
    assert fan_ins(4, 10) == [3, 3, 2, 2]
    assert fan_ins(3, 3) == [1, 1, 1]


def test_wiring_draws_distinct_sources_per_neuron() -> None:
    torch.manual_seed(0)
    model = ELMNetwork(5, 2, num_neurons=6, k_e=2, k_c=11)   # every one of 5 + 6 sources
    for i in range(6):
        sources = model.src[model.dst == i]
        assert sorted(sources.tolist()) == list(range(11))


def test_too_many_connections_are_refused() -> None:
    message = "connections must be in [num_neurons, num_neurons * (in_features + num_neurons)] = [2, 10], got 11"
    with pytest.raises(ValueError, match=re.escape(message)):
        ELMNetwork(3, 2, num_neurons=2, k_e=2, k_c=1, connections=11)


def test_timescales_start_log_spaced_inside_their_bounds() -> None:
    model = ELMNetwork(3, 2, num_neurons=2, k_e=2, k_c=2, memory_units=3, tau_min=1.0, tau_max=1000.0)
    torch.testing.assert_close(model.tau_m[0], torch.tensor([10.0 ** 0.75, 10.0 ** 1.5, 10.0 ** 2.25]))
    x = torch.tensor([2.0, 50.0])
    torch.testing.assert_close(scaled_sigmoid(inverse_scaled_sigmoid(x, 1.0, 100.0), 1.0, 100.0), x)


def reference_step_by_step(model: ELMNetwork, x: torch.Tensor) -> torch.Tensor:
    """The module docstring's equations, one neuron and one connection at a time (float64)."""
    steps, n = x.shape[0], model.num_neurons
    kappa_s = float(model.kappa_s)   # exp(-1 / tau_s), stored in the module's dtype
    assert kappa_s == pytest.approx(math.exp(-1 / 5.0), rel=1e-7)
    kappa_m = torch.exp(-1 / model.tau_m.double())
    trace = torch.zeros(model.in_features + n, dtype=torch.float64)
    memory = torch.zeros(n, model.w_mem.shape[1], dtype=torch.float64)
    y = torch.zeros(n, dtype=torch.float64)
    outs = []
    for t in range(steps):
        trace = kappa_s * trace + torch.cat([x[t].double(), y])
        new_memory, new_y = memory.clone(), y.clone()
        for i in range(n):
            pre = model.b_hidden[i].double() + (kappa_m[i] * memory[i]) @ model.w_mem[i].double()
            for j in torch.nonzero(model.dst == i).flatten().tolist():
                pre = pre + torch.relu(model.w_syn[j].double()) * trace[model.src[j]] * model.w_in[j].double()
            delta = 1.7159 * torch.tanh(2 / 3 * (torch.relu(pre) @ model.w_out[i].double() + model.b_out[i].double()))
            new_memory[i] = kappa_m[i] * memory[i] + 3.0 * (1 - kappa_m[i]) * delta
            new_y[i] = new_memory[i] @ model.w_y[i].double() + model.b_y[i].double()
        memory, y = new_memory, new_y
        outs.append(y)
    return torch.stack(outs)


def test_dynamics_match_the_equations_neuron_by_neuron() -> None:
    torch.manual_seed(1)
    model = ELMNetwork(3, 2, num_neurons=4, k_e=3, k_c=2, connections=9, memory_units=2).double()
    with torch.no_grad():
        model.w_syn.uniform_(-0.5, 1.0)   # some synapses silenced by the relu
        model.b_y.normal_()
    x = (torch.rand(6, 3) < 0.5).double()
    got = model.neuron_outputs(x[None])[0]
    torch.testing.assert_close(got, reference_step_by_step(model, x), rtol=1e-10, atol=1e-10)


def test_readouts_and_token_inputs() -> None:
    torch.manual_seed(0)
    model = ELMNetwork(5, 3, num_neurons=4, k_e=2, k_c=3)
    x = torch.rand(2, 7, 5)
    assert model(x).shape == (2, 3)
    every = ELMNetwork(5, 3, num_neurons=4, k_e=2, k_c=3, readout="every_step")
    every.load_state_dict(model.state_dict())
    torch.testing.assert_close(every(x)[:, -1], model(x))
    ids = torch.tensor([[0, 4, 2]])
    torch.testing.assert_close(every(ids), every(torch.nn.functional.one_hot(ids, 5).float()))
    with pytest.raises(ValueError, match=r"ELMNetwork expects \(B, T, 5\) inputs, got \(2, 7, 4\)"):
        model(torch.rand(2, 7, 4))


def test_output_depends_on_the_past_only() -> None:
    torch.manual_seed(0)
    model = ELMNetwork(4, 2, num_neurons=5, k_e=3, k_c=4, readout="every_step")
    x = torch.rand(1, 8, 4)
    changed = x.clone()
    changed[:, 5:] = torch.rand(1, 3, 4)
    torch.testing.assert_close(model(x)[:, :5], model(changed)[:, :5])
    assert not torch.allclose(model(x)[:, 5:], model(changed)[:, 5:])


def test_lecun_tanh_slope_and_range() -> None:
    assert float(lecun_tanh(torch.tensor(1.0))) == pytest.approx(1.0, abs=1e-3)   # LeCun's f(1) ~ 1
    assert float(lecun_tanh(torch.tensor(100.0))) == pytest.approx(1.7159)
