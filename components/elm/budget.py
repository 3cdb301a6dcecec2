"""The exact trainable-parameter count of an ELM network, and the allocator that splits a budget P
among the number of neurons N, each neuron's complexity k_e and its connectivity k_c.

Seed paper: Spieler, Martius & Levina, "Scaling Laws and Tradeoffs in Recurrent Networks of
Expressive Neurons" (NeurIPS 2026; specs/elm_budget/README.md).

The count (every trainable tensor of `components.elm.network.ELMNetwork`, nothing else):

    P(N, k_e, K) = K (1 + k_e)                                  per connection: synaptic weight, MLP input row
                 + N (2 d_m k_e + k_e + 3 d_m + 1 + n_out)      per neuron: MLP memory rows, biases and output
                                                                layer, memory timescales, output weights + bias,
                                                                its readout column
                 + n_out                                        readout bias

with K the total number of connections (neurons have floor(K/N) or ceil(K/N) of them, so the mean
connectivity is k_c = K / N), d_m the memory units per neuron and n_out the readout width.

The allocator keeps k_e as asked and solves N and K: among N whose mean connectivity K / N stays
within `tolerance` of the asked k_c, the one whose count is closest to P (exactly P when some N
allows it), ties broken by the connectivity closest to k_c. What it could not match is stated as
`residual` = P - count. Pure Python: specs and claims can use it without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass


def connection_cost(k_e: int) -> int:
    """Trainable parameters one connection adds: its synaptic weight and its row of the MLP's
    first layer (k_e)."""
    return 1 + k_e


def neuron_cost(k_e: int, memory_units: int, out_features: int) -> int:
    """Trainable parameters one neuron adds besides its connections: MLP rows of the memory
    (d_m k_e), hidden bias (k_e), output layer (k_e d_m + d_m), memory timescales (d_m), output
    weights and bias (d_m + 1), and its column of the readout (n_out)."""
    return 2 * memory_units * k_e + k_e + 3 * memory_units + 1 + out_features


def parameter_count(num_neurons: int, k_e: int, connections: int, memory_units: int, out_features: int) -> int:
    """P(N, k_e, K) of the module docstring."""
    return (connections * connection_cost(k_e) + num_neurons * neuron_cost(k_e, memory_units, out_features)
            + out_features)


@dataclass(frozen=True)
class Allocation:
    """One split of a budget: N neurons of complexity k_e with K connections in all."""

    budget: int
    num_neurons: int
    k_e: int
    connections: int
    parameters: int

    @property
    def k_c(self) -> float:
        """Mean connections per neuron, K / N."""
        return self.connections / self.num_neurons

    @property
    def residual(self) -> int:
        """Budget minus the parameters of this split (0: matched exactly)."""
        return self.budget - self.parameters


def allocate(budget: int, k_e: int, k_c: float, in_features: int, out_features: int, memory_units: int,
             tolerance: float = 0.25) -> Allocation:
    """The split of `budget` with complexity k_e and mean connectivity near k_c (module docstring).

    A neuron's fan-in is at most in_features + N (every input channel and every neuron, itself
    included). Raises ValueError when not even one neuron fits the budget."""
    if k_e < 1 or k_c < 1 or tolerance < 0:
        raise ValueError(f"allocate needs k_e >= 1, k_c >= 1, tolerance >= 0; got k_e={k_e}, k_c={k_c}, "
                         f"tolerance={tolerance}")
    a, b = connection_cost(k_e), neuron_cost(k_e, memory_units, out_features)
    ideal = (budget - out_features) / (k_c * a + b)  # real N with K = N k_c exactly
    if ideal < 1:
        smallest = parameter_count(1, k_e, max(1, round(k_c)), memory_units, out_features)
        raise ValueError(f"budget {budget} is below one neuron with k_e={k_e}, k_c={k_c} ({smallest} parameters)")
    best: tuple[tuple[float, float], Allocation] | None = None
    for n in range(1, int(2 * ideal) + 2):
        fan_in = in_features + n
        k = round((budget - out_features - n * b) / a)
        k = min(max(k, n), n * fan_in)
        if abs(k / n - k_c) > tolerance * k_c and n != round(ideal):
            continue
        option = Allocation(budget, n, k_e, k, parameter_count(n, k_e, k, memory_units, out_features))
        key = (abs(option.residual), abs(option.k_c - k_c))
        if best is None or key < best[0]:
            best = (key, option)
    assert best is not None  # n = round(ideal) >= 1 is always a candidate
    return best[1]
