"""components/procurement/mechanisms.py: offers and payments worked by hand, the guarantees each
budget transform keeps or breaks, and Singer's proportional share (allocation and threshold
payments by hand; the additive shortcut equals the general greedy rule)."""

from __future__ import annotations

import pytest
import torch

from components.procurement.markets import RandomMarkets
from components.procurement.mechanisms import MenuNet, ProportionalPosted, ProportionalShare, \
    SequentialProportionalShare, UniformPosted


def additive(values: list[float], costs: list[float], budget: float = 1.0) -> dict[str, torch.Tensor]:
    return {"weights": torch.tensor([values], dtype=torch.float64),
            "costs": torch.tensor([costs], dtype=torch.float64), "budget": torch.tensor([budget], dtype=torch.float64)}


def markets(valuation: str = "additive", count: int = 400, seed: int = 0) -> dict[str, torch.Tensor]:
    data = RandomMarkets(sellers=8, valuation=valuation, elements=16, test_instances=count, seed=seed)
    return {k: v.double() for k, v in data.fixed("test").items()}


def test_posted_price_baselines_by_hand() -> None:
    market = additive([0.8, 0.4], [0.5, 0.2])
    # Sequential proportional share: offer 1 * 0.8 / 1.2 = 2/3 to seller 0 (taken), then the
    # remaining 1/3 * 0.4 / 0.4 to seller 1 (taken): the budget is spent exactly.
    accept, pay = SequentialProportionalShare()(market, market["costs"])
    assert accept.tolist() == [[1.0, 1.0]]
    assert pay[0].tolist() == pytest.approx([2 / 3, 1 / 3], abs=1e-15)
    # Proportional posted: offers 2/3 and 1/3 from the start; uniform: 1/2 each (seller 0 takes
    # 1/2 >= 0.5 at equality).
    assert ProportionalPosted()(market, market["costs"])[1][0].tolist() == pytest.approx([2 / 3, 1 / 3], abs=1e-15)
    accept, pay = UniformPosted()(market, torch.tensor([[0.5, 0.6]], dtype=torch.float64))
    assert accept.tolist() == [[1.0, 0.0]] and pay.tolist() == [[0.5, 0.0]]


def test_offer_does_not_depend_on_the_own_bid() -> None:
    torch.manual_seed(0)
    net = MenuNet(hidden=[16]).double()
    market = markets("coverage", count=200)
    _, truthful = net(market, market["costs"])
    for seller in range(8):
        low = market["costs"].clone()
        low[:, seller] = 0.0  # everyone takes an offer of >= 0: the payment is the offer itself
        accept, pay = net(market, low)
        assert bool((accept[:, seller] == 1).all())
        taken = truthful[:, seller] > 0
        assert torch.equal(pay[taken, seller], truthful[taken, seller])


def generous(transform: str) -> MenuNet:
    """A menu that offers (nearly) the whole base to everyone: fraction sigmoid(20)."""
    net = MenuNet(hidden=[4], budget_transform=transform).double()
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net.net[-1].bias.fill_(20.0)
    return net


def test_budget_transforms_keep_or_break_the_guarantees() -> None:
    market = markets("additive")
    budget = market["budget"]
    for transform, feasible, rational in [("sequential", True, True), ("none", False, True), ("ex_post_scale", True, False)]:
        accept, pay = generous(transform)(market, market["costs"])
        overspend = float((pay.sum(1) - budget).max())
        loss = float((market["costs"] * accept - pay).max())
        assert (overspend <= 1e-12) == feasible, (transform, overspend)
        assert (loss <= 1e-12) == rational, (transform, loss)
    # Sequential: the first seller is offered nearly all of B and takes it; little is left.
    _, pay = generous("sequential")(market, market["costs"])
    assert float(pay.max(1).values.min()) > 0.99


def test_relaxed_acceptance_is_differentiable_and_hard_in_the_limit() -> None:
    torch.manual_seed(1)
    net = MenuNet(hidden=[8], temperature=1e-6).double()
    market = markets("coverage", count=50)
    soft, _ = net(market, market["costs"], relaxed=True)
    hard, _ = net(market, market["costs"])
    assert torch.allclose(soft, hard, atol=1e-6)
    net = MenuNet(hidden=[8])
    soft, _ = net({k: v.float() for k, v in market.items()}, market["costs"].float(), relaxed=True)
    soft.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_self_bid_menu_reads_the_bid() -> None:
    assert "bid" not in MenuNet().inputs and "bid" in MenuNet(self_bid=True).inputs
    with pytest.raises(ValueError, match="budget_transform must be one of sequential, none, ex_post_scale"):
        MenuNet(budget_transform="clip")


def test_proportional_share_by_hand() -> None:
    # Ratios v/b: 4 and 1. Seller 0 fits (0.2 <= 0.8 / 0.8); seller 1 does not (0.4 > 0.4 / 1.2).
    # Seller 0's threshold is 0.8: above it seller 1 comes first and then seller 0 needs b <= 0.8 / 1.2.
    market = additive([0.8, 0.4], [0.2, 0.4])
    accept, pay = ProportionalShare(share=1.0, bisection_steps=40)(market, market["costs"])
    assert accept.tolist() == [[1.0, 0.0]]
    assert pay[0, 0].item() == pytest.approx(0.8, abs=1e-9) and pay[0, 0].item() <= 0.8 and pay[0, 1] == 0
    with pytest.raises(ValueError, match="no relaxation"):
        ProportionalShare()(market, market["costs"], relaxed=True)


def test_additive_shortcut_equals_the_greedy_rule() -> None:
    market = markets("additive", count=300)
    dense = {**market, "cover": torch.eye(8, dtype=torch.float64).expand(300, 8, 8)}  # the general greedy path
    rule = ProportionalShare(share=1.0, bisection_steps=20)
    bids = market["costs"] * torch.rand_like(market["costs"]).mul(2)
    fast = rule.allocate(market, bids)
    assert torch.equal(rule.allocate(dense, bids), fast)
    assert bool(fast.any(1).all())
    for mechanism in (rule, SequentialProportionalShare(), generous("sequential")):
        for a, b in zip(mechanism(market, bids), mechanism(dense, bids)):
            assert torch.allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("valuation,share", [("additive", 1.0), ("coverage", 0.5)])
def test_proportional_share_is_budget_feasible_and_ir(valuation: str, share: float) -> None:
    market = markets(valuation, count=300, seed=3)
    accept, pay = ProportionalShare(share=share)(market, market["costs"])
    assert float((pay.sum(1) - market["budget"]).max()) <= 1e-12
    assert bool((pay >= market["costs"] * accept).all())
    assert bool((pay[accept == 0] == 0).all())
