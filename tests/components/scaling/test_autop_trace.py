"""components/scaling/trace.py: which parameter dims each traced op contracts, and width exponents."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from torch import nn

from components.models.mlp import MLP
from components.scaling.trace import compare_widths, trace_uses


class Custom(nn.Module):
    """Parameters used outside nn.Linear: x @ W.T, an einsum, a tied readout, an elementwise gain."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.embed = nn.Parameter(torch.randn(5, n))
        self.w = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        self.u = nn.Parameter(torch.randn(3, n, 2))
        self.gain = nn.Parameter(torch.ones(n))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = nn.functional.embedding(ids, self.embed)
        h = (h @ self.w.T) * self.gain
        h = h + torch.einsum("bld,kdr->blk", h, self.u.transpose(1, 1)).sum(-1, keepdim=True)
        return h @ self.embed.T


def test_uses_name_the_contracted_dims_of_each_op() -> None:
    uses = trace_uses(Custom(4), torch.tensor([[0, 1, 2]]))
    seen = [(u.param, u.op, u.contracted, u.indexed, u.at_output) for u in uses]
    assert seen == [
        ("embed", "embedding", (), (0,), False),
        ("w", "matmul", (1,), (), False),          # x @ W.T sums over W's dim 1 (its fan-in)
        ("gain", "mul", (), (), False),
        ("u", "einsum", (1, 2), (), False),        # d and r of "kdr" are dropped by the output
        ("embed", "matmul", (1,), (), True),       # the tied readout h @ E.T, the model's output
    ]


def test_linear_contracts_the_in_dimension_and_its_bias_is_elementwise() -> None:
    uses = trace_uses(MLP(3, 2, (4,)), torch.zeros(1, 3))
    assert [(u.param, u.op, u.contracted) for u in uses] == [
        ("net.0.weight", "linear", (1,)), ("net.0.bias", "linear", ()),
        ("net.2.weight", "linear", (1,)), ("net.2.bias", "linear", ())]
    assert [u.at_output for u in uses] == [False, False, True, True]


def test_an_op_without_a_rule_is_recorded_as_unsupported() -> None:
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.cumsum(self.w, 0)

    assert trace_uses(Odd(), torch.ones(3))[0].op == "unsupported:cumsum"


def test_width_exponents_and_measured_init_of_an_mlp() -> None:
    torch.manual_seed(0)
    trace = compare_widths(MLP(8, 3, (256, 256)), MLP(8, 3, (16, 16)), torch.randn(2, 8))
    assert trace.multiplier == 16.0
    assert trace.dims["net.2.weight"] == (1, 1) and trace.dims["net.0.weight"] == (1, 0)
    assert trace.dims["net.4.weight"] == (0, 1) and trace.dims["net.4.bias"] == (0,)
    # PyTorch's default init: std ~ fan_in^-1/2, so m^-1/2 where the fan-in grows, m^0 where not
    assert trace.init["net.2.weight"] == Fraction(1, 2) and trace.init["net.0.weight"] == 0


def test_models_that_are_not_one_model_at_two_widths_are_refused() -> None:
    with pytest.raises(ValueError, match="same parameters"):
        compare_widths(MLP(8, 3, (16, 16)), MLP(8, 3, (16,)), torch.randn(2, 8))


def test_a_weight_computed_elementwise_is_followed_to_the_op_that_uses_it() -> None:
    """`linear(x, W * mask)`: the use of W is the linear (it contracts W's fan-in), not the mul."""

    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(2, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.linear(x, self.w * torch.tensor([1.0, 0.0, 1.0]))

    assert [(u.param, u.op, u.contracted) for u in trace_uses(Masked(), torch.ones(4, 3))] == [("w", "linear", (1,))]
