"""What the paper claims tests share (not a test module): a claim checked on made-up numbers shaped
like the paper's outcome, and on the same numbers with its run control swapped in."""

from __future__ import annotations

from typing import Any

from framework.claims.expressions import evaluate


def holds_and_its_control_fails(claim: Any, runs: dict[str, Any], control_decided: bool = False) -> None:
    """The claim passes, decided and without error, on `runs` (alias -> numbers, the outcome the
    paper reports); with its run control swapped in it does not pass: false, or undecided (the
    claims tool counts an undecided control as not passing: a baseline swapped in for the method
    typically gives a difference around 0, an interval that straddles the bar), or with
    `control_decided` decided false only."""
    assert claim.control.is_run, f"{claim.name}: made-up control numbers"
    outcome = evaluate(claim, runs)
    assert outcome.passed and not outcome.error and not outcome.inconclusive, (outcome.numbers, outcome.error)
    assert outcome.control_passed is False and not outcome.control_error, outcome.control_error
    assert not (control_decided and outcome.control_undecided), outcome.control_undecided
