"""components/adapters/claims.py: `column_at`, each seed's value at one setting of a swept grid, alone
and in a check (a tuned variant's accuracies compared seed by seed; a tuned rate at the grid's edge
makes the claim inconclusive)."""

from __future__ import annotations

from typing import Any

import pytest

from components.adapters.claims import column_at
from framework.claims import Claim, evaluate
from framework.claims.reproduction import TrialResult

RATES = [1e-3, 3e-3, 1e-2]


def test_column_at_reads_every_seed_of_a_setting_in_trial_order() -> None:
    values = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    params = [1e-3, 1e-3, 3e-3, 3e-3, 1e-2, 1e-2]
    assert column_at(values, params, 3e-3) == [0.3, 0.4]
    assert column_at(values, params, 0.003 * (1 + 1e-12)) == [0.3, 0.4]  # rates compared to 1e-9
    assert column_at([1.0, 2.0], ["a", "b"], "b") == [2.0]


@pytest.mark.parametrize(("values", "params", "setting", "message"), [
    ([0.1, 0.2], [1e-3, 3e-3], 1e-2, "no trial with setting"),
    ([0.1], [1e-3, 3e-3], 1e-3, "equal-length"),
    ([], [], 1e-3, "non-empty"),
])
def test_column_at_names_what_does_not_match(values: list[float], params: list, setting: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        column_at(values, params, setting)


def _sweep(accuracy: dict[float, list[float]]) -> list[TrialResult]:
    """A rate grid x seeds 0-2 sweep, trials in grid order (the seeds inner)."""
    return [TrialResult(None, {"test/accuracy": a}, values={"optimizer.lr": lr, "seed": s})
            for lr, column in accuracy.items() for s, a in enumerate(column)]


def _tuned(alias: str) -> str:
    return (f"column_at(column({alias}, 'test/accuracy'), param({alias}, 'optimizer.lr'), "
            f"best({alias}, 'optimizer.lr', 'test/accuracy', 'max'))")


CHECK = f"abs(paired_margin({_tuned('a')}, {_tuned('b')})) <= 0.02"


def _outcome(a: dict[float, list[float]], b: dict[float, list[float]]) -> Any:
    claim = Claim(name="c", kind="supporting", text="t", check=CHECK,
                  control={"text": "far worse b", "replace": {"b": "worse"}})
    worse = _sweep({lr: [x - 0.3 for x in column] for lr, column in b.items()})
    return evaluate(claim, {"a": _sweep(a), "b": _sweep(b), "worse": worse})


def test_tuned_accuracies_are_paired_by_seed() -> None:
    a = {1e-3: [0.5, 0.6, 0.7], 3e-3: [0.90, 0.80, 0.95], 1e-2: [0.6, 0.5, 0.4]}
    b = {1e-3: [0.5, 0.6, 0.7], 3e-3: [0.91, 0.81, 0.955], 1e-2: [0.6, 0.5, 0.4]}  # 0.005-0.01 below a, every seed
    outcome = _outcome(a, b)
    assert outcome.status == "pass", outcome.error  # the seeds' spread (0.15) cancels in the pairs


def test_a_tuned_rate_at_the_grid_edge_is_inconclusive() -> None:
    a = {1e-3: [0.5, 0.6, 0.7], 3e-3: [0.90, 0.80, 0.95], 1e-2: [0.6, 0.5, 0.4]}
    b = {1e-3: [0.5, 0.6, 0.7], 3e-3: [0.6, 0.5, 0.4], 1e-2: [0.91, 0.81, 0.955]}  # best at the last rate
    outcome = _outcome(a, b)
    assert outcome.inconclusive and "grid" in outcome.undecided, outcome.status
