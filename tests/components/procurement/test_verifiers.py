"""components/procurement/verifiers.py: each check's numbers on mechanisms whose answer is known
by hand: a pay-as-bid posted price (profitable overbids), a mechanism that overspends, one that
pays below cost; and none found on the guaranteed mechanisms."""

from __future__ import annotations

import pytest
import torch

from components.procurement.markets import RandomMarkets
from components.procurement.mechanisms import MenuNet, ProportionalShare
from components.procurement.verifiers import BudgetCheck, IRCheck, MisreportGrid


def one_seller(cost: float) -> dict[str, torch.Tensor]:
    return {"weights": torch.tensor([[1.0]], dtype=torch.float64), "cover": torch.ones(1, 1, 1, dtype=torch.float64),
            "costs": torch.tensor([[cost]], dtype=torch.float64), "budget": torch.tensor([1.0], dtype=torch.float64)}


def pay_as_bid(market, bids):
    """Posted price 0.62, paid the bid: bidding up to the price is profitable."""
    accept = (bids <= 0.62).to(bids.dtype)
    return accept, accept * bids


def overspend(market, bids):
    """Buys everyone at 0.7 each."""
    return torch.ones_like(bids), torch.full_like(bids, 0.7)


def test_misreport_grid_finds_the_overbid() -> None:
    # Cost 0.1: truthful utility 0; the best grid bid below 0.62 is 0.6 (step 0.05): gain 0.5.
    found = MisreportGrid(points=21)(pay_as_bid, one_seller(0.1))
    assert found["misreport_gain_max"] == pytest.approx(0.5, abs=1e-12)
    assert found["misreport_profitable_rate"] == 1.0 and found["misreport_gain_mean"] == pytest.approx(0.5)
    # A finer grid finds a better bid: 0.62 itself with 51 points (step 0.02).
    assert MisreportGrid(points=51)(pay_as_bid, one_seller(0.1))["misreport_gain_max"] == pytest.approx(0.52)


def test_budget_and_ir_checks() -> None:
    market = one_seller(0.9)
    market = {k: v.repeat(4, *([1] * (v.dim() - 1))) for k, v in market.items()}
    budget = BudgetCheck()(overspend, {**market, "budget": torch.full((4,), 0.5, dtype=torch.float64)})
    assert budget == pytest.approx({"budget_violation_max": 0.2, "budget_violation_rate": 1.0})
    assert BudgetCheck()(overspend, market) == {"budget_violation_max": 0.0, "budget_violation_rate": 0.0}
    ir = IRCheck()(overspend, market)  # paid 0.7 for a cost of 0.9
    assert ir == pytest.approx({"ir_violation_max": 0.2, "ir_violation_rate": 1.0})
    # A loss within the tolerance is rounding, reported as none.
    assert IRCheck(tolerance=0.25)(overspend, market) == {"ir_violation_max": 0.0, "ir_violation_rate": 0.0}


def test_no_profitable_misreport_on_the_guaranteed_mechanisms() -> None:
    data = RandomMarkets(sellers=6, valuation="additive", test_instances=100)
    market = {k: v.double() for k, v in data.fixed("test").items()}
    torch.manual_seed(0)
    menu = MenuNet(hidden=[8]).double()
    assert MisreportGrid(points=11)(menu, market)["misreport_gain_max"] == 0.0
    singer = ProportionalShare(share=1.0, bisection_steps=30)  # threshold payments, to 2^-30 B
    # Threshold payments bisected to 2^-30 B: below the threshold by at most ~1e-9 B.
    assert MisreportGrid(points=11, tolerance=1e-8)(singer, market)["misreport_gain_max"] == 0.0
    for check in (BudgetCheck(), IRCheck()):
        assert max(check(singer, market).values()) == 0.0
