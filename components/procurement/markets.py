"""Random procurement markets: the simulator a budget-feasible mechanism is trained against.

A market instance has n sellers, each holding one item at a private cost c_i, and a buyer with a
budget B and a public valuation over sets of items. Valuations are coverage functions, which
include the additive ones: m ground elements with weights w_e >= 0, seller i covers the elements
of a public 0/1 row cover[i]; the value of a set S of sellers is the weight of what they cover,
V(S) = sum_e w_e * [some i in S covers e]. Additive valuations are the case cover = identity
(m = n, w = the items' values), stored without the identity: a market without `cover` is additive,
so that its helpers cost O(n) per seller, not O(n^2). A batch of instances is a dict of tensors:

- `weights` (N, m): element weights; `cover` (N, n, m): 0/1 incidence (absent: additive, m = n);
- `costs` (N, n): the sellers' private costs (what a truthful seller bids);
- `budget` (N,): the buyer's budget B.

With soft acceptance probabilities a_i in [0, 1] (a relaxed mechanism in training) the value is
the expected coverage under independent acceptance, sum_e w_e (1 - prod_i (1 - a_i cover_ie)),
which equals V(S) when the a_i are 0/1.
"""

from __future__ import annotations

from typing import Literal

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from components.data.base import ResumableLoader
from components.types import NonNegativeInt, OpenFraction, PositiveFloat, PositiveInt, Probability

Market = dict[str, torch.Tensor]


def is_additive(market: Market) -> bool:
    """Whether the valuation is additive (the market has no `cover`: seller i covers element i)."""
    return "cover" not in market


def standalone_values(market: Market) -> torch.Tensor:
    """V({i}) for every seller: (N, n)."""
    if is_additive(market):
        return market["weights"]
    return torch.einsum("nim,nm->ni", market["cover"], market["weights"])


def marginal_values(market: Market, uncovered: torch.Tensor) -> torch.Tensor:
    """Each seller's marginal value given the (soft) uncovered share of each element: (N, n)."""
    if is_additive(market):
        return market["weights"] * uncovered
    return torch.einsum("nim,nm->ni", market["cover"], market["weights"] * uncovered)


def cover_update(market: Market, uncovered: torch.Tensor, seller: torch.Tensor, accept: torch.Tensor) -> torch.Tensor:
    """The uncovered share after `seller` (N,) is accepted with probability `accept` (N,)."""
    if is_additive(market):
        rows = torch.nn.functional.one_hot(seller, uncovered.shape[1]).to(uncovered.dtype)
    else:
        rows = market["cover"][torch.arange(len(seller), device=seller.device), seller]
    return uncovered * (1.0 - accept[:, None] * rows)


def procurement_value(market: Market, accept: torch.Tensor) -> torch.Tensor:
    """V(accepted set) per instance, (N,); expected coverage for soft acceptance (module docstring)."""
    if is_additive(market):
        return (market["weights"] * accept).sum(-1)
    missed = torch.prod(1.0 - accept[:, :, None] * market["cover"], dim=1)
    return (market["weights"] * (1.0 - missed)).sum(-1)


def public_order(market: Market) -> torch.Tensor:
    """The order sellers are approached in: by standalone value, largest first (public data only,
    so a seller's bid cannot move its place), (N, n) seller indices."""
    return torch.argsort(standalone_values(market), dim=1, descending=True, stable=True)


def sample_markets(
    count: int,
    generator: torch.Generator,
    sellers: int,
    valuation: str,
    elements: int,
    cover_prob: float,
    cost_floor: float,
    budget: float,
) -> Market:
    """`count` instances (module docstring). Additive: item values v_i ~ U[0, 1]. Coverage: m
    elements of weight U[0, 1] / (m * cover_prob), each covered by each seller with probability
    cover_prob, so a seller's standalone value has mean 1/2 as in the additive case. Costs:
    c_i ~ U[0, cost_floor + (1 - cost_floor) min(V({i}), 1)] (valuable items tend to cost more)."""
    if valuation == "additive":
        market = {"weights": torch.rand(count, sellers, generator=generator)}
    elif valuation == "coverage":
        weights = torch.rand(count, elements, generator=generator) / (elements * cover_prob)
        cover = (torch.rand(count, sellers, elements, generator=generator) < cover_prob).float()
        market = {"weights": weights, "cover": cover}
    else:
        raise ValueError(f"valuation must be 'additive' or 'coverage', got {valuation!r}")
    scale = cost_floor + (1.0 - cost_floor) * standalone_values(market).clamp(max=1.0)
    market["costs"] = torch.rand(count, sellers, generator=generator) * scale
    market["budget"] = torch.full((count,), float(budget))
    return market


def generator_for(seed: int, stream: int, index: int) -> torch.Generator:
    """A generator for draw `index` of `stream` (0 train, 1 val, 2 test) under `seed`: the three
    mixed by numpy's SeedSequence into one 32-bit seed (torch's CPU generator keeps 32 bits, so
    sums such as seed * K + index would collide)."""
    state = np.random.SeedSequence([seed, stream, index]).generate_state(1)[0]
    return torch.Generator().manual_seed(int(state))


class _MarketBatches(Dataset):
    """Batch k of the stream is drawn from its own generator, seeded by (seed, k): any batch can
    be made again on its own (a resumed run), and epoch e reads batches e * len .. (e + 1) * len - 1."""

    def __init__(self, draw, batches: int, batch_size: int, seed: int) -> None:
        self.draw, self.batches, self.batch_size, self.seed = draw, batches, batch_size, seed

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, index: int) -> Market:
        return self.draw(self.batch_size, generator_for(self.seed, 0, index))


class _EpochIndices(Sampler[int]):
    """Indices epoch * len .. epoch * len + len - 1 in order: every epoch reads fresh instances.
    Lightning calls `set_epoch` at the start of each epoch."""

    def __init__(self, size: int) -> None:
        self.size, self.epoch = size, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        return iter(range(self.epoch * self.size, (self.epoch + 1) * self.size))

    def __len__(self) -> int:
        return self.size


class _Fixed(Dataset):
    def __init__(self, market: Market) -> None:
        self.market = market

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> Market:
        return self.market


class RandomMarkets(L.LightningDataModule):
    """A simulator of procurement markets (module docstring): training reads a stream of fresh
    instances, `batches_per_epoch` batches of `batch_size` per epoch, never repeated (batch k is
    drawn from (seed, k)); validation and test are one batch each of fixed instances, drawn from
    seeds of their own, so every mechanism of a run is evaluated on the same test markets.

    Args:
        sellers: Sellers n per market.
        valuation: "additive" (item values) or "coverage" (a submodular coverage function).
        elements: Ground elements m of a coverage valuation (unused by additive).
        cover_prob: Probability that a seller covers an element (coverage).
        cost_floor: Cost support for a seller of standalone value v is [0, floor + (1 - floor) v].
        budget: The buyer's budget B.
        batch_size: Instances per training batch.
        batches_per_epoch: Training batches per epoch (the stream is endless; this sets the epoch).
        val_instances: Validation instances.
        test_instances: Test instances.
        seed: Seed of the stream and of the fixed splits (write `${seed}` to follow the run).
    """

    def __init__(
        self,
        sellers: PositiveInt = 10,
        valuation: Literal["additive", "coverage"] = "additive",
        elements: PositiveInt = 20,
        cover_prob: OpenFraction = 0.2,
        cost_floor: Probability = 0.3,
        budget: PositiveFloat = 1.0,
        batch_size: PositiveInt = 512,
        batches_per_epoch: PositiveInt = 800,
        val_instances: PositiveInt = 2000,
        test_instances: PositiveInt = 10000,
        seed: NonNegativeInt = 0,
    ) -> None:
        super().__init__()
        if valuation not in ("additive", "coverage"):
            raise ValueError(f"valuation must be 'additive' or 'coverage', got {valuation!r}")
        self.sellers, self.valuation, self.elements = sellers, valuation, elements
        self.cover_prob, self.cost_floor, self.budget = cover_prob, cost_floor, budget
        self.batch_size, self.batches_per_epoch = batch_size, batches_per_epoch
        self.val_instances, self.test_instances, self.seed = val_instances, test_instances, seed
        self._fixed: dict[str, Market] = {}

    def draw(self, count: int, generator: torch.Generator) -> Market:
        """`count` fresh instances from `generator`."""
        return sample_markets(count, generator, self.sellers, self.valuation, self.elements,
                              self.cover_prob, self.cost_floor, self.budget)

    def fixed(self, split: str) -> Market:
        """The val or test instances (drawn once, from a seed of the split's own)."""
        if split not in self._fixed:
            count = {"val": self.val_instances, "test": self.test_instances}[split]
            self._fixed[split] = self.draw(count, generator_for(self.seed, {"val": 1, "test": 2}[split], 0))
        return self._fixed[split]

    def info(self) -> dict[str, int]:
        return {"sellers": self.sellers}

    def train_dataloader(self) -> DataLoader:
        batches = _MarketBatches(self.draw, self.batches_per_epoch, self.batch_size, self.seed)
        return ResumableLoader(batches, batch_size=None, sampler=_EpochIndices(self.batches_per_epoch))

    def val_dataloader(self) -> DataLoader:
        return DataLoader(_Fixed(self.fixed("val")), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(_Fixed(self.fixed("test")), batch_size=None)
