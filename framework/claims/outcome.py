"""A claim's result (`Outcome`), and what its check read and compared (`Series`, `Tested`):
made by framework.claims.expressions, shown by the report and drawn by framework.claims.figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.claims.schema import Claim


@dataclass
class Tested:
    """A comparison of the check of a computed number with a threshold: the computed
    `quantity` (its text in the check), its `value` (a number, or an Interval from
    margin/paired_margin/best), `op` and the `threshold`, read as `quantity op threshold`;
    `holds` is the comparison's value (True, False, or None when undecided); `threshold_text`
    the threshold's text when it is computed (`0.8 * mean(column(base, 'test/gap'))`), else ""."""

    quantity: str
    value: Any
    op: str
    threshold: float
    holds: bool | None
    threshold_text: str = ""


# A series a check read: per trial (one item for a plain run), its swept values and the metric.
Series = list[tuple[dict[str, Any], Any]]


@dataclass
class Outcome:
    """A claim's result. `numbers` are the values the check (and its floor) read, for the table;
    `ran` is False for a claim that was not evaluated (a full-tier claim without `--full`).
    `passed` is True only when the check is decided true and the floor holds; `undecided` is why
    the results cannot decide it (the claim is inconclusive: framework.claims.evidence);
    `floor_passed` is the floor check's value (None: the claim has no floor, or it is undecided,
    said in `undecided`). `control_passed` is the check's value on the negative control (None:
    not evaluated; an undecided check on the control counts as not passing, with
    `control_undecided` saying why); a claim whose control passes too cannot fail. `read` (label
    `alias[metric]` -> Series) and `tested` (Tested) are what the check and its floor read and
    compared, for the claim's figure (framework.claims.figures); the floor's are labelled `floor: `."""

    claim: Claim
    passed: bool
    numbers: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    ran: bool = True
    control_passed: bool | None = None
    control_error: str = ""
    undecided: str = ""
    floor_passed: bool | None = None
    control_undecided: str = ""
    refuted: bool = False  # the check itself is decided false
    failed_runs: list[str] = field(default_factory=list)  # aliases read that did not finish
    read: dict[str, Series] = field(default_factory=dict)
    tested: list[Tested] = field(default_factory=list)

    @property
    def inconclusive(self) -> bool:
        """Ran, and neither held nor was refuted: the check (or its floor) is undecided, and
        nothing else makes it fail (a false check or floor, an error)."""
        return (self.ran and bool(self.undecided) and not self.error and not self.refuted
                and self.floor_passed is not False)

    @property
    def failed(self) -> bool:
        """A headline or supporting claim that ran and did not hold (its check false, or raising,
        or below its floor), or held while its control does not make its check false (the check
        holds on it too, or raises on it: a control that cannot be evaluated shows nothing). An
        inconclusive claim did not fail, and did not hold. A deviation never fails a
        reproduction: it records what did not reproduce."""
        if not self.ran or self.claim.kind == "deviation" or self.inconclusive:
            return False
        return not self.passed or bool(self.control_passed) or bool(self.control_error)

    @property
    def status(self) -> str:
        """The table's result: `pass`, `FAIL`, `FAIL: not above its floor`, `FAIL: its control
        passes too`, `FAIL: its control raises`, `inconclusive: <why>`; for a deviation `NOT
        REPRODUCED` (or `reproduced after all: promote it`); and `full tier, not run`."""
        if not self.ran:
            return "full tier, not run"
        if self.inconclusive:
            return f"inconclusive: {self.undecided}"
        below = self.floor_passed is False
        if self.claim.kind == "deviation":
            return "reproduced after all: promote it" if self.passed else "NOT REPRODUCED"
        if below and not self.error:
            return "FAIL: not above its floor"
        if self.passed and self.control_passed:
            return "FAIL: its control passes too"
        if self.passed and self.control_error:
            return "FAIL: its control raises"
        return "pass" if self.passed else "FAIL"
