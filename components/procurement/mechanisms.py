"""Procurement mechanisms: who is bought from, and at what payment, given the sellers' bids.

The contract of the `mechanisms` kind: ``mechanism(market, bids, relaxed=False) -> (accept,
payments)``, both (N, n); `accept` is 0/1 (soft probabilities in [0, 1] when `relaxed`, for
training; payments are then expected payments), and `label` names the mechanism in metric keys.
A mechanism with parameters is trained by the `mechanism_design` task; one without is evaluated.

Posted prices (`PostedPrices`): sellers are approached one at a time in a public order (largest
standalone value first); seller i is offered a take-it-or-leave-it price p_i computed from public
data and from what happened to the sellers before it (the remaining budget R, the uncovered part
of the valuation), never from its own bid; it is bought iff b_i <= p_i and then paid p_i. So a
seller's bid only decides whether it takes an offer it cannot move: truthful bidding is a dominant
strategy (DSIC), and a seller bought is paid at least its cost (IR). The budget transform makes
the offers budget-feasible:

- "sequential": p_i = f_i * R, f_i in [0, 1]: no offer exceeds what is left, so the payments
  never exceed B, exactly, on every instance. (Our stand-in for BFMNet's ex-post menu transform,
  whose exact form is not in the abstract; it keeps DSIC, IR and budget feasibility exact.)
- "none": p_i = f_i * B; the payments may exceed B (an ablation).
- "ex_post_scale": p_i = f_i * B, then, where the payments exceed B, all are scaled down by
  B / total: budget-feasible but no longer IR (a seller may be paid less than its bid), the
  naive repair this family's transform avoids (an ablation).

`MenuNet` learns f_i with a small network of self-bid-independent features; `self_bid: true`
feeds it the seller's own bid as well (RegretNet-style: no longer DSIC by construction; an
ablation for the verifier). `ProportionalShare` is Singer's budget-feasible mechanism, with
threshold payments.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from components.procurement.markets import Market, cover_update, is_additive, marginal_values, public_order, \
    standalone_values
from components.types import PositiveFloat, PositiveInt, Probability

Transform = Literal["sequential", "none", "ex_post_scale"]
TRANSFORMS = ("sequential", "none", "ex_post_scale")
# Features of an offer, each (N,): the seller's marginal value, R / B, its marginal value over the
# marginal values of the sellers not yet approached (itself included), the share of sellers not
# yet approached, its standalone value over all sellers' standalone values, and bid / B. (The
# features also hold `sellers`, n, for mechanisms that need it.)
FEATURES = ("marginal", "remaining", "share", "left", "value_share", "bid")


class PostedPrices(nn.Module):
    """Base of posted-price mechanisms (module docstring); a subclass implements
    `fraction(features) -> (N,)` in [0, 1], the offer as a share of R ("sequential") or of B.

    Args:
        budget_transform: "sequential", "none" or "ex_post_scale" (module docstring).
        temperature: Softness of the relaxed acceptance sigmoid((p_i - b_i) / temperature).
    """

    label = "posted"

    def __init__(self, budget_transform: Transform = "sequential", temperature: PositiveFloat = 0.02) -> None:
        super().__init__()
        if budget_transform not in TRANSFORMS:
            raise ValueError(f"budget_transform must be one of {', '.join(TRANSFORMS)}, got {budget_transform!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.budget_transform, self.temperature = budget_transform, temperature

    def fraction(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, market: Market, bids: torch.Tensor, relaxed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        count, sellers = bids.shape
        rows = torch.arange(count, device=bids.device)
        budget = market["budget"]
        order = public_order(market)
        position = torch.argsort(order, dim=1)  # each seller's place in the order
        standalone = standalone_values(market)
        value_share = standalone / standalone.sum(1, keepdim=True).clamp_min(1e-12)
        uncovered = torch.ones_like(market["weights"])
        remaining = budget
        accept = torch.zeros_like(bids)
        payments = torch.zeros_like(bids)
        for k in range(sellers):
            seller = order[:, k]
            marginal = marginal_values(market, uncovered)
            own = marginal[rows, seller]
            pending = (marginal * (position >= k)).sum(1)
            features = {
                "marginal": own, "remaining": remaining / budget, "share": own / pending.clamp_min(1e-12),
                "left": torch.full_like(own, (sellers - k) / sellers), "value_share": value_share[rows, seller],
                "bid": bids[rows, seller] / budget, "sellers": torch.full_like(own, sellers),
            }
            base = remaining if self.budget_transform == "sequential" else budget
            price = self.fraction(features).clamp(0.0, 1.0) * base
            bid = bids[rows, seller]
            taken = torch.sigmoid((price - bid) / self.temperature) if relaxed else (bid <= price).to(bids.dtype)
            paid = taken * price
            remaining = remaining - paid
            uncovered = cover_update(market, uncovered, seller, taken)
            accept = accept.scatter(1, seller[:, None], taken[:, None])
            payments = payments.scatter(1, seller[:, None], paid[:, None])
        if self.budget_transform == "ex_post_scale":
            total = payments.sum(1)
            payments = payments * (budget / total.clamp_min(1e-12)).clamp(max=1.0)[:, None]
        return accept, payments


class MenuNet(PostedPrices):
    """A learned posted-price menu: f_i = sigmoid(MLP(features of seller i's offer)); the
    features are public or depend on earlier sellers only (`FEATURES` without `bid`), so the
    mechanism is DSIC and IR by construction and budget-feasible under the "sequential" transform.

    Args:
        hidden: Widths of the hidden layers (ReLU).
        self_bid: Also feed the seller's own bid / B (no longer DSIC: an ablation).
        budget_transform: See `PostedPrices`.
        temperature: See `PostedPrices`.
    """

    label = "menu_net"

    def __init__(
        self,
        hidden: list[PositiveInt] | None = None,
        self_bid: bool = False,
        budget_transform: Transform = "sequential",
        temperature: PositiveFloat = 0.02,
    ) -> None:
        super().__init__(budget_transform, temperature)
        hidden = [64, 64] if hidden is None else list(hidden)
        self.inputs = [f for f in FEATURES if f != "bid" or self_bid]
        self.self_bid = self_bid
        layers: list[nn.Module] = []
        width = len(self.inputs)
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def fraction(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        x = torch.stack([features[f] for f in self.inputs], dim=-1)
        return torch.sigmoid(self.net(x)).squeeze(-1)


class UniformPosted(PostedPrices):
    """Every seller is offered B / n (the offers sum to B: budget-feasible without a transform)."""

    label = "uniform_posted"

    def __init__(self) -> None:
        super().__init__("none")

    def fraction(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        return 1.0 / features["sellers"]


class ProportionalPosted(PostedPrices):
    """Seller i is offered B * V({i}) / sum_j V({j}): offers proportional to standalone value,
    summing to B (budget-feasible without a transform)."""

    label = "proportional_posted"

    def __init__(self) -> None:
        super().__init__("none")

    def fraction(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        return features["value_share"]


class SequentialProportionalShare(PostedPrices):
    """Seller i is offered R * m_i / (sum of the marginal values of the sellers not yet
    approached): the remaining budget split in proportion to marginal value, re-split after each
    offer (a posted-price cousin of Singer's proportional share rule)."""

    label = "sequential_proportional_share"

    def __init__(self) -> None:
        super().__init__("sequential")

    def fraction(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        return features["share"]


class ProportionalShare(nn.Module):
    """Singer's proportional-share mechanism (Singer 2010, "Budget feasible mechanisms"; the
    deterministic rule, without the randomized fallback to the single most valuable seller).

    Allocation: greedily take the seller of largest marginal value per unit of bid, m_i(S) / b_i,
    while its bid is at most `share` * B * m_i(S) / V(S + i); stop at the first that is not.
    The rule is monotone (a lower bid never loses), so each winner is paid its threshold, the
    largest bid at which it still wins, found by bisection on [b_i, B] (`bisection_steps`
    halvings; the payment is the last bid found winning, so never above the threshold). Threshold
    payments make it DSIC and IR; share = 1 is budget-feasible for additive valuations, share =
    1/2 for submodular ones (Singer 2010).

    Args:
        share: The share of the budget in the stopping rule (1 additive, 0.5 submodular).
        bisection_steps: Halvings of the bisection for each threshold payment.
    """

    label = "proportional_share"

    def __init__(self, share: Probability = 1.0, bisection_steps: PositiveInt = 30) -> None:
        super().__init__()
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.share, self.bisection_steps = share, bisection_steps

    def allocate(self, market: Market, bids: torch.Tensor) -> torch.Tensor:
        """The winners (N, n), bool."""
        if is_additive(market):
            return self._allocate_additive(market["weights"], bids, market["budget"])
        count, sellers = bids.shape
        rows = torch.arange(count, device=bids.device)
        budget = market["budget"]
        uncovered = torch.ones_like(market["weights"])
        won = torch.zeros_like(bids, dtype=torch.bool)
        value = torch.zeros_like(budget)
        going = torch.ones_like(budget, dtype=torch.bool)
        for _ in range(sellers):
            marginal = marginal_values(market, uncovered)
            ratio = torch.where(bids > 0, marginal / bids.clamp_min(1e-300), torch.inf)
            ratio = torch.where(won | (marginal <= 0), -torch.inf, ratio)
            seller = ratio.argmax(1)
            gain = marginal[rows, seller]
            going = going & (ratio[rows, seller] > -torch.inf)
            going = going & (bids[rows, seller] <= self.share * budget * gain / (value + gain).clamp_min(1e-300))
            won = won.scatter(1, seller[:, None], (won[rows, seller] | going)[:, None])
            value = value + torch.where(going, gain, 0.0)
            uncovered = cover_update(market, uncovered, seller, going.to(bids.dtype))
        return won

    def _allocate_additive(self, values: torch.Tensor, bids: torch.Tensor, budget: torch.Tensor) -> torch.Tensor:
        """The same rule for additive valuations, where the greedy order is fixed: sort by v_i / b_i,
        and the winners are the longest prefix whose every k has b_k <= share * B * v_k / V(first k)."""
        ratio = torch.where(bids > 0, values / bids.clamp_min(1e-300), torch.inf)
        ratio = torch.where(values > 0, ratio, -torch.inf)
        order = torch.argsort(ratio, dim=1, descending=True, stable=True)
        v, b = values.gather(1, order), bids.gather(1, order)
        fits = (b <= self.share * budget[:, None] * v / v.cumsum(1).clamp_min(1e-300)) & (v > 0)
        prefix = torch.cumprod(fits.to(torch.int8), dim=1).bool()
        return torch.zeros_like(prefix).scatter(1, order, prefix)

    def forward(self, market: Market, bids: torch.Tensor, relaxed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        if relaxed:
            raise ValueError("proportional_share has no relaxation: it is evaluated, not trained")
        won = self.allocate(market, bids)
        # Bisect every winner's threshold at once: one copy of its instance per winner.
        instance, who = won.nonzero(as_tuple=True)
        stacked = {key: value[instance] for key, value in market.items()}
        rows = torch.arange(len(who), device=bids.device)
        base = bids[instance]
        low, high = bids[instance, who], stacked["budget"].clone()
        for _ in range(self.bisection_steps):
            middle = 0.5 * (low + high)
            wins = self.allocate(stacked, base.index_put((rows, who), middle))[rows, who]
            low = torch.where(wins, middle, low)
            high = torch.where(wins, high, middle)
        payments = torch.zeros_like(bids).index_put((instance, who), low)
        return won.to(bids.dtype), payments
