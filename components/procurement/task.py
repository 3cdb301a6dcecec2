"""Automated mechanism design against a simulator: train a mechanism on random markets, then
evaluate it next to classical mechanisms on the same test markets and verify its guarantees.

Paradigm "learning against a simulator, with a verifier": the data module (`random_markets`)
streams fresh market instances; the task's `mechanism:` (kind `mechanisms`) is trained, when it
has parameters, to maximize the buyer's procurement value under its relaxed (soft-acceptance)
form, loss = -mean V; the spec has no `model:` or `loss:` section. At test time every mechanism
runs with hard decisions in float64 on the test markets, and each `verifiers:` node (kind
`mechanism_verifiers`) checks it there.

Logged keys:
- `train/loss` (-relaxed value), `train/value` (relaxed) per step; `val/value` (hard) per epoch.
- `test/value`: the mean procurement value of the trained mechanism; `test/payment`: its mean
  total payment; `test/<key>` for every key of every verifier.
- For each baseline of label L: `test/value_L`, `test/payment_L` and, with `verify_baselines`,
  `test/<key>_L`; `test/value_best_baseline` (the largest baseline value) and
  `test/value_ratio` (test/value over it).
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Callable

import lightning as L
import torch

from components.kinds import Kind
from components.procurement.markets import Market, procurement_value
from components.tasks.supervised import log_loss, optimizers_config

Mechanism = Annotated[Any, Kind("mechanisms")]
Verifier = Annotated[Any, Kind("mechanism_verifiers")]


class MechanismDesign(L.LightningModule):
    """Train a procurement mechanism on simulated markets and verify it (module docstring).

    Args:
        mechanism: The mechanism trained (if it has parameters) and verified.
        optimizer: Factory called with the mechanism's parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        baselines: Mechanisms evaluated on the same test markets (labels must differ).
        verifiers: Checks run on the mechanism at test time (misreport grid, budget, IR).
        verify_baselines: Run the verifiers on the baselines too.
    """

    def __init__(
        self,
        mechanism: Mechanism,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict[str, Any]] | None = None,
        baselines: list[Mechanism] | None = None,
        verifiers: list[Verifier] | None = None,
        verify_baselines: bool = False,
    ) -> None:
        super().__init__()
        self.mechanism = mechanism
        self.baselines = torch.nn.ModuleList(baselines or [])
        labels = [getattr(m, "label", None) for m in [mechanism, *self.baselines]]
        if None in labels:
            raise TypeError(f"every mechanism needs a `label` (components.procurement.mechanisms), got {labels}")
        repeated = sorted({x for x in labels[1:] if labels[1:].count(x) > 1})
        if repeated:
            raise ValueError(f"baselines must have distinct labels (they name metric keys), repeated: {repeated}")
        self.verifiers = list(verifiers or [])
        self.verify_baselines = verify_baselines
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.trainable = any(p.requires_grad for p in mechanism.parameters())

    def configure_optimizers(self) -> Any:
        if not self.trainable:
            return None
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.mechanism.parameters())

    def training_step(self, market: Market, batch_idx: int) -> torch.Tensor | None:
        if not self.trainable:
            return None
        accept, _ = self.mechanism(market, market["costs"], relaxed=True)
        value = procurement_value(market, accept).mean()
        log_loss(self, "train", -value, len(accept))
        self.log("train/value", value, on_step=True, on_epoch=False, batch_size=len(accept))
        return -value

    def validation_step(self, market: Market, batch_idx: int) -> None:
        accept, _ = self.mechanism(market, market["costs"])
        self.log("val/value", procurement_value(market, accept).mean(), on_epoch=True, batch_size=len(accept))

    @torch.no_grad()
    def evaluate(self, mechanism: Any, market: Market, verify: bool) -> dict[str, float]:
        """Value, payment and (if `verify`) every verifier's keys of one mechanism, in float64."""
        exact = copy.deepcopy(mechanism).double()
        accept, payments = exact(market, market["costs"])
        numbers = {"value": float(procurement_value(market, accept).mean()), "payment": float(payments.sum(1).mean())}
        if verify:
            for verifier in self.verifiers:
                numbers.update(verifier(exact, market))
        return numbers

    def test_step(self, market: Market, batch_idx: int) -> None:
        market = {k: v.double() for k, v in market.items()}
        numbers = self.evaluate(self.mechanism, market, verify=True)
        values = []
        for baseline in self.baselines:
            found = self.evaluate(baseline, market, verify=self.verify_baselines)
            numbers.update({f"{key}_{baseline.label}": value for key, value in found.items()})
            values.append(found["value"])
        if values:
            numbers["value_best_baseline"] = max(values)
            numbers["value_ratio"] = numbers["value"] / max(max(values), 1e-300)
        for key, value in numbers.items():
            self.log(f"test/{key}", value, batch_size=1)
