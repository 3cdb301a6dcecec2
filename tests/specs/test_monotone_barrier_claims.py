"""monotone_barrier's claims can fail: each holds on the outcome the paper reports (certified at
every size with flat or linear queries; a dense grid that certifies the smallest size and runs out
of budget beyond it; a clean audit) and its negative control, a real run swapped in (the
unconstrained network, the method's runs in place of the dense grid's, the untrained network),
makes it false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/monotone_barrier"
DIMS = [2, 4, 8, 16]


def _sweep(dims: list[int], per_dim) -> list[Numbers]:
    return [Numbers(per_dim(d, s), {"task.system.dim": d, "seed": s}) for d in dims for s in (0, 1, 2)]


def _method(d: int, s: int) -> dict[str, float]:
    return {"test/certified": 1.0, "test/n_queries": 94.0 + d / 4 + s, "test/n_queries_needed": 94.0 + d / 4 + s,
            "test/budget_exceeded": 0.0, "test/audit_violations": 0.0}


def _dense(d: int, s: int) -> dict[str, float]:
    needed = 94.0 + (20.0 + s) ** min(d, 200)
    return {"test/certified": float(needed <= 20000), "test/n_queries": min(needed, 20000.0),
            "test/n_queries_needed": needed, "test/budget_exceeded": float(needed > 20000),
            "test/audit_violations": 0.0}


def _unconstrained(d: int, s: int) -> dict[str, float]:
    return dict(_method(d, s), **{"test/certified": 0.0})


def _untrained(d: int, s: int) -> dict[str, float]:
    return dict(_method(d, s), **{"test/certified": 0.0, "test/audit_violations": 4096.0})


PAPER_OUTCOME = {
    "cells": _sweep(DIMS, _method),
    "dense": _sweep(DIMS, _dense),
    "unconstrained": _sweep([2, 16], _unconstrained),
    "untrained": _sweep([2, 16], _untrained),
    "cells_full": _sweep([2, 8, 32, 128, 512], _method),
    "dense_full": _sweep([2, 8, 32, 128, 512], _dense),
}


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def test_queries_growing_faster_than_linear_fail_the_headline() -> None:
    """Queries ~ n^1.5 on every seed: the slope's interval lies above 1, the headline is false."""
    claim = next(c for c in load_claims(SPECS)[0].claims if c.name == "certified_with_at_most_linear_queries")
    fast = _sweep(DIMS, lambda d, s: dict(_method(d, s), **{"test/n_queries": 10.0 * d ** (1.5 + 0.01 * s)}))
    outcome = evaluate(claim, dict(PAPER_OUTCOME, cells=fast))
    assert outcome.passed is False and not outcome.inconclusive
