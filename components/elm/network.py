"""The ELM network: a recurrent layer of Expressive Leaky Memory neurons with sparse connectivity,
read out linearly.

Seed paper: Spieler, Martius & Levina, "Scaling Laws and Tradeoffs in Recurrent Networks of
Expressive Neurons" (NeurIPS 2026); the neuron is ELM v1 (Spieler et al., ICLR 2024), applied per
unit. specs/elm_budget/README.md.

Each of the N neurons reads K_i of the S = in_features + N sources (the input channels at step t
and every neuron's output at step t - 1), chosen at random without repetition when the module is
built (torch's generator: the run's seed); K = sum K_i, and K_i is floor(K / N) or ceil(K / N).
Per step t, for neuron i with memory m_i (d_m units) and connections j = 1..K_i from source src_j:

    trace      s_t   = kappa_s s_{t-1} + u_t                 (per source; kappa_s = exp(-1 / tau_s), fixed)
    synapses   z_j   = relu(w_j) s_t[src_j]
    integrate  h_i   = relu(sum_j z_j A_j + B_i (kappa_m,i * m_i) + b_i)          (k_e hidden units)
               dm_i  = 1.7159 tanh(2/3 (C_i h_i + c_i))
    memory     m_i   = kappa_m,i * m_i + lambda (1 - kappa_m,i) * dm_i          (kappa_m = exp(-1 / tau_m))
    output     y_i   = v_i . m_i + e_i

tau_m (per neuron and memory unit) is learned inside [tau_min, tau_max] through a scaled sigmoid,
initialised log-spaced. k_e, the hidden width of each neuron's integration MLP, is its
complexity; K / N is its connectivity. The readout maps the N outputs to `out_features`: at the
last step (`readout: last`, sequence classification) or at every step (`every_step`). The count of
trainable parameters is exactly `components.elm.budget.parameter_count`.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from components.elm.budget import Allocation, allocate
from components.types import PositiveFloat, PositiveInt


def scaled_sigmoid(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """low + (high - low) sigmoid(x): a value kept inside (low, high)."""
    return low + (high - low) * torch.sigmoid(x)


def inverse_scaled_sigmoid(y: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """The x with scaled_sigmoid(x, low, high) = y, for y inside (low, high)."""
    return torch.log((y - low) / (high - y))


def lecun_tanh(x: torch.Tensor) -> torch.Tensor:
    """1.7159 tanh(2x / 3) (LeCun's scaled tanh, ELM's output nonlinearity)."""
    return 1.7159 * torch.tanh(x * 2 / 3)


def fan_ins(num_neurons: int, connections: int) -> list[int]:
    """Connections per neuron: floor(K / N) each, one more for the first K mod N neurons."""
    base, extra = divmod(connections, num_neurons)
    return [base + (i < extra) for i in range(num_neurons)]


def random_wiring(num_neurons: int, sources: int, connections: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(source, target) index per connection: neuron i draws fan_ins(...)[i] distinct sources of
    `sources` with torch's global generator."""
    src, dst = [], []
    for i, k in enumerate(fan_ins(num_neurons, connections)):
        if k > sources:
            raise ValueError(f"neuron {i} needs {k} connections but there are only {sources} sources")
        src.append(torch.randperm(sources)[:k])
        dst.append(torch.full((k,), i, dtype=torch.long))
    return torch.cat(src), torch.cat(dst)


class ELMNetwork(nn.Module):
    """A recurrent layer of N ELM neurons and a linear readout (module docstring).

    Input (B, T, in_features) floats, or (B, T) token ids, which are one-hot encoded over
    in_features. Output (B, out_features) for `readout: last`, (B, T, out_features) for `every_step`.

    Args:
        in_features: Input channels (or vocabulary size for token ids).
        out_features: Readout width (classes, or vocabulary size).
        num_neurons: N, the number of ELM neurons.
        k_e: Complexity: hidden width of each neuron's integration MLP.
        k_c: Connectivity: connections per neuron (each reads k_c of in_features + N sources).
        connections: Total connections K, spread as evenly as possible (None: N k_c); lets a budget
            allocation use a mean connectivity that is not an integer.
        memory_units: d_m, memory units per neuron.
        tau_min: Smallest memory timescale (steps).
        tau_max: Largest memory timescale (steps).
        tau_s: Timescale of the synaptic traces (steps; fixed).
        lambda_value: Scale of the memory update (ELM's lambda).
        readout: "last" (sequence classification) or "every_step" (sequence labelling, LMs).
    """

    def __init__(
        self,
        in_features: PositiveInt,
        out_features: PositiveInt,
        num_neurons: PositiveInt = 16,
        k_e: PositiveInt = 8,
        k_c: PositiveInt = 16,
        connections: PositiveInt | None = None,
        memory_units: PositiveInt = 4,
        tau_min: PositiveFloat = 1.0,
        tau_max: PositiveFloat = 100.0,
        tau_s: PositiveFloat = 5.0,
        lambda_value: PositiveFloat = 3.0,
        readout: Literal["last", "every_step"] = "last",
    ) -> None:
        super().__init__()
        if readout not in ("last", "every_step"):
            raise ValueError(f"readout must be 'last' or 'every_step', got {readout!r}")
        if not tau_min < tau_max:
            raise ValueError(f"tau_min must be < tau_max, got {tau_min} and {tau_max}")
        sources = in_features + num_neurons
        connections = num_neurons * k_c if connections is None else connections
        if not num_neurons <= connections <= num_neurons * sources:
            raise ValueError(f"connections must be in [num_neurons, num_neurons * (in_features + num_neurons)] = "
                             f"[{num_neurons}, {num_neurons * sources}], got {connections}")
        self.in_features, self.num_neurons, self.readout_mode = in_features, num_neurons, readout
        self.tau_min, self.tau_max, self.lambda_value = tau_min, tau_max, lambda_value
        src, dst = random_wiring(num_neurons, sources, connections)
        self.register_buffer("src", src)
        self.register_buffer("dst", dst)
        self.register_buffer("kappa_s", torch.tensor(math.exp(-1.0 / tau_s)))
        fan_in = connections / num_neurons + memory_units
        bound_in, bound_out = 1 / math.sqrt(fan_in), 1 / math.sqrt(k_e)
        self.w_syn = nn.Parameter(torch.full((connections,), 0.5))                        # w_j
        self.w_in = nn.Parameter(torch.empty(connections, k_e).uniform_(-bound_in, bound_in))  # A_j
        self.w_mem = nn.Parameter(torch.empty(num_neurons, memory_units, k_e).uniform_(-bound_in, bound_in))  # B_i
        self.b_hidden = nn.Parameter(torch.empty(num_neurons, k_e).uniform_(-bound_in, bound_in))
        self.w_out = nn.Parameter(torch.empty(num_neurons, k_e, memory_units).uniform_(-bound_out, bound_out))  # C_i
        self.b_out = nn.Parameter(torch.empty(num_neurons, memory_units).uniform_(-bound_out, bound_out))
        tau = torch.logspace(math.log10(tau_min), math.log10(tau_max), memory_units + 2)[1:-1]
        self.tau_raw = nn.Parameter(inverse_scaled_sigmoid(tau, tau_min, tau_max).repeat(num_neurons, 1))
        bound_y = 1 / math.sqrt(memory_units)
        self.w_y = nn.Parameter(torch.empty(num_neurons, memory_units).uniform_(-bound_y, bound_y))  # v_i
        self.b_y = nn.Parameter(torch.zeros(num_neurons))                                  # e_i
        self.readout = nn.Linear(num_neurons, out_features)

    @property
    def tau_m(self) -> torch.Tensor:
        """Memory timescales (N, d_m), inside [tau_min, tau_max]."""
        return scaled_sigmoid(self.tau_raw, self.tau_min, self.tau_max)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, in_features) floats: token ids (B, T) one-hot encoded, floats as given."""
        if x.dtype in (torch.long, torch.int32, torch.int64):
            return nn.functional.one_hot(x, self.in_features).float()
        if x.ndim != 3 or x.shape[-1] != self.in_features:
            raise ValueError(f"ELMNetwork expects (B, T, {self.in_features}) inputs, got {tuple(x.shape)}")
        return x

    def neuron_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """The neurons' outputs y (B, T, N) for inputs (B, T, in_features)."""
        batch, steps, _ = x.shape
        kappa_m = torch.exp(-1.0 / self.tau_m)
        gain = self.lambda_value * (1 - kappa_m)
        weights = torch.relu(self.w_syn)[:, None] * self.w_in                         # (K, k_e)
        trace = x.new_zeros(batch, self.in_features + self.num_neurons)
        memory = x.new_zeros(batch, self.num_neurons, self.w_mem.shape[1])
        y = x.new_zeros(batch, self.num_neurons)
        outputs = []
        for t in range(steps):
            trace = self.kappa_s * trace + torch.cat([x[:, t], y], dim=1)
            synaptic = trace[:, self.src, None] * weights                              # (B, K, k_e)
            hidden = torch.zeros(batch, self.num_neurons, weights.shape[1], dtype=x.dtype, device=x.device)
            hidden = hidden.index_add(1, self.dst, synaptic)
            hidden = hidden + torch.einsum("bnd,nde->bne", kappa_m * memory, self.w_mem) + self.b_hidden
            delta = lecun_tanh(torch.einsum("bne,ned->bnd", torch.relu(hidden), self.w_out) + self.b_out)
            memory = kappa_m * memory + gain * delta
            y = (memory * self.w_y).sum(-1) + self.b_y
            outputs.append(y)
        return torch.stack(outputs, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.neuron_outputs(self.inputs(x))
        return self.readout(y[:, -1] if self.readout_mode == "last" else y)


class ELMBudgetNetwork(ELMNetwork):
    """An ELM network whose N and connections are solved from a parameter budget: it keeps the
    asked complexity k_e and solves N and K so that its count of trainable parameters is the
    budget, or the closest count the tolerance on connectivity allows (`components.elm.budget.allocate`;
    `allocation.residual` states the difference).

    Args:
        in_features: Input channels (or vocabulary size for token ids).
        out_features: Readout width.
        budget: P, trainable parameters to spend.
        k_e: Complexity: hidden width of each neuron's integration MLP.
        k_c: Target mean connections per neuron.
        tolerance: Largest relative deviation of the mean connectivity from k_c the solver may use
            to match the budget exactly.
        memory_units: d_m, memory units per neuron.
        tau_min: Smallest memory timescale (steps).
        tau_max: Largest memory timescale (steps).
        tau_s: Timescale of the synaptic traces (steps; fixed).
        lambda_value: Scale of the memory update.
        readout: "last" or "every_step".
    """

    def __init__(
        self,
        in_features: PositiveInt,
        out_features: PositiveInt,
        budget: PositiveInt,
        k_e: PositiveInt = 8,
        k_c: PositiveFloat = 16.0,
        tolerance: PositiveFloat = 0.25,
        memory_units: PositiveInt = 4,
        tau_min: PositiveFloat = 1.0,
        tau_max: PositiveFloat = 100.0,
        tau_s: PositiveFloat = 5.0,
        lambda_value: PositiveFloat = 3.0,
        readout: Literal["last", "every_step"] = "last",
    ) -> None:
        if k_c < 1:
            raise ValueError(f"k_c must be >= 1, got {k_c}")
        self.allocation: Allocation = allocate(budget, k_e, k_c, in_features, out_features, memory_units, tolerance)
        super().__init__(in_features, out_features, num_neurons=self.allocation.num_neurons, k_e=k_e, k_c=1,
                         connections=self.allocation.connections, memory_units=memory_units, tau_min=tau_min,
                         tau_max=tau_max, tau_s=tau_s, lambda_value=lambda_value, readout=readout)
