"""Verifiers: checks of a mechanism's economic guarantees on given markets, run at test time.

The contract of the `mechanism_verifiers` kind (not the diffusion family's `verifiers`, which
score images): ``verifier(mechanism, market) -> dict[str, float]``, where
`mechanism(market, bids)` returns (accept, payments), each (N, n), for single-parameter sellers
whose true costs are `market["costs"]` and budget `market["budget"]`. A verifier evaluates the
mechanism itself (hard decisions, under `torch.no_grad()`), so it holds for any mechanism of the
`mechanisms` kind, learned or classical. A seller's utility is payment - cost * accept.
The keys it returns are logged by the task as `test/<key>` (`test/<key>_<label>` for baselines).

Each check has a `tolerance` (a share of the budget B): a violation or gain within it is rounding,
not a violation, and is reported as 0 (a batch of another size rounds an offer differently by
~1e-16, and sum(payments) rounds apart from B minus the payments so far), so that the reported
numbers do not depend on the machine's arithmetic.
"""

from __future__ import annotations

from typing import Annotated

import torch
from annotated_types import Ge

from components.procurement.markets import Market
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt


def beyond(excess: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """`excess` where it exceeds `allowed`, else 0 (module docstring: rounding is no violation)."""
    return torch.where(excess > allowed, excess, torch.zeros_like(excess))


def utilities(mechanism, market: Market, bids: torch.Tensor) -> torch.Tensor:
    """Each seller's utility (N, n) at `bids`, measured with its true cost."""
    accept, payments = mechanism(market, bids)
    return payments - market["costs"] * accept


class BudgetCheck:
    """Budget feasibility under truthful bids: the total payment never exceeds B.

    Returns `budget_violation_max` (the largest overspend beyond `tolerance` * B, 0 when none;
    absolute, in budget units) and `budget_violation_rate` (the share of instances that overspend).

    Args:
        tolerance: Overspend, as a share of B, still counted as feasible (rounding).
    """

    def __init__(self, tolerance: NonNegativeFloat = 1e-9) -> None:
        self.tolerance = tolerance

    @torch.no_grad()
    def __call__(self, mechanism, market: Market) -> dict[str, float]:
        _, payments = mechanism(market, market["costs"])
        overspend = beyond(payments.sum(1) - market["budget"], self.tolerance * market["budget"])
        return {"budget_violation_max": float(overspend.max()), "budget_violation_rate": float((overspend > 0).double().mean())}


class IRCheck:
    """Individual rationality under truthful bids: no seller ends with negative utility.

    Returns `ir_violation_max` (the largest loss of a seller beyond `tolerance` * B, 0 when none)
    and `ir_violation_rate` (the share of (instance, seller) pairs losing).

    Args:
        tolerance: Loss, as a share of B, still counted as none (rounding).
    """

    def __init__(self, tolerance: NonNegativeFloat = 1e-9) -> None:
        self.tolerance = tolerance

    @torch.no_grad()
    def __call__(self, mechanism, market: Market) -> dict[str, float]:
        loss = beyond(-utilities(mechanism, market, market["costs"]), self.tolerance * market["budget"][:, None])
        return {"ir_violation_max": float(loss.max()), "ir_violation_rate": float((loss > 0).double().mean())}


class MisreportGrid:
    """Dominant-strategy incentive compatibility, searched on a grid: on the first `instances`
    markets, every seller in turn bids each of `points` values evenly spaced on [0, high * B]
    while the others bid truthfully; its gain is the best utility found minus its truthful utility.

    Returns `misreport_gain_max` (the largest gain beyond `tolerance` * B over instances and
    sellers; 0: no profitable misreport was found), `misreport_gain_mean` (the mean over (instance,
    seller) of those gains, 0 where none) and `misreport_profitable_rate` (the share of (instance,
    seller) pairs with one).

    Args:
        points: Grid points per seller (21: steps of B / 20 with high = 1).
        high: Top of the grid as a share of the budget.
        instances: Markets checked (the first ones of the split); n * points mechanism runs each.
        tolerance: Gain, as a share of B, still counted as none (rounding).
    """

    def __init__(self, points: Annotated[int, Ge(2)] = 21, high: PositiveFloat = 1.0, instances: PositiveInt = 1000,
                 tolerance: NonNegativeFloat = 1e-9) -> None:
        self.points, self.high, self.instances, self.tolerance = points, high, instances, tolerance

    @torch.no_grad()
    def __call__(self, mechanism, market: Market) -> dict[str, float]:
        market = {k: v[: self.instances] for k, v in market.items()}
        costs, budget = market["costs"], market["budget"]
        count, sellers = costs.shape
        truthful = utilities(mechanism, market, costs)
        grid = torch.linspace(0.0, self.high, self.points, dtype=costs.dtype, device=costs.device)
        # One mechanism run per seller: the grid stacked along the instances, (points * N, n).
        repeated = {k: v.repeat(self.points, *([1] * (v.dim() - 1))) for k, v in market.items()}
        misreports = (grid[:, None] * budget[None, :]).reshape(-1)
        best = torch.full_like(costs, -torch.inf)
        for seller in range(sellers):
            bids = repeated["costs"].clone()
            bids[:, seller] = misreports
            gained = utilities(mechanism, repeated, bids)[:, seller].reshape(self.points, count)
            best[:, seller] = gained.max(0).values
        gain = beyond(best - truthful, self.tolerance * budget[:, None])
        return {"misreport_gain_max": float(gain.max()), "misreport_gain_mean": float(gain.mean()),
                "misreport_profitable_rate": float((gain > 0).double().mean())}
