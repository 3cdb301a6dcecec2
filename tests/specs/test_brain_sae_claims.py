"""brain_sae's claims can fail: each holds on the outcome the paper reports (the coupled SAE near
the dense ridge model's prediction, recovering the planted brain atoms better than the two-stage
SAE at each arm's tuned rate, transferring better than ridge) and its negative control, a real run
swapped in (the untrained SAE with random atoms, or the two-stage SAE for the coupled one), makes
it false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/brain_sae"
RATES = (3e-3, 1e-2, 3e-2, 1e-1)


def _grid(by_rate: dict[float, list[dict[str, float]]]) -> list[Numbers]:
    """An lr sweep's trials in the sweep's order (rate-major, seeds inside)."""
    return [Numbers(metrics, {"optimizer.lr": rate, "seed": seed})
            for rate in RATES for seed, metrics in enumerate(by_rate[rate])]


def _arm(val_r: list[float], test_r: list[float], recovery: list[float], transfer: list[float]) -> list[dict[str, float]]:
    return [{"val/r": v, "test/r": t, "test/atom_recovery": a, "test/transfer_r": tr}
            for v, t, a, tr in zip(val_r, test_r, recovery, transfer)]


def _shift(arm: list[dict[str, float]], by: float) -> list[dict[str, float]]:
    return [{k: v + by for k, v in metrics.items()} for metrics in arm]


# The paper's outcome at our size: the coupled arm best at 3e-2 (r ~0.55 against ridge's 0.60, 91%),
# the two-stage arm best at 1e-2 with worse atom recovery and r; random atoms far below.
COUPLED_BEST = _arm([0.56, 0.55, 0.57], [0.55, 0.54, 0.56], [0.90, 0.91, 0.92], [0.35, 0.36, 0.34])
TWO_STAGE_BEST = _arm([0.50, 0.51, 0.49], [0.49, 0.50, 0.48], [0.80, 0.82, 0.81], [0.20, 0.22, 0.21])
RANDOM = _arm([0.19, 0.18, 0.20], [0.18, 0.17, 0.19], [0.27, 0.26, 0.28], [0.06, 0.07, 0.05])
COUPLED = {3e-3: _shift(COUPLED_BEST, -0.1), 1e-2: _shift(COUPLED_BEST, -0.02), 3e-2: COUPLED_BEST,
           1e-1: _shift(COUPLED_BEST, -0.05)}
TWO_STAGE = {3e-3: _shift(TWO_STAGE_BEST, -0.06), 1e-2: TWO_STAGE_BEST, 3e-2: _shift(TWO_STAGE_BEST, -0.02),
             1e-1: _shift(TWO_STAGE_BEST, -0.05)}
RIDGE = [Numbers({"test/r": r, "test/transfer_r": t}, {"seed": s})
         for s, (r, t) in enumerate(zip([0.60, 0.59, 0.61], [0.24, 0.23, 0.25]))]
STORY = [Numbers({"test/r": r}, {"seed": s}) for s, r in enumerate([0.20, 0.21, 0.19])]
STORY_RIDGE = [Numbers({"test/r": r}, {"seed": s}) for s, r in enumerate([0.22, 0.23, 0.22])]
STORY_RANDOM = [Numbers({"test/r": r}, {"seed": s}) for s, r in enumerate([0.05, 0.06, 0.04])]

PAPER_OUTCOME = {
    "coupled": _grid(COUPLED),
    "coupled_lr": _grid(COUPLED),
    "two_stage": _grid(TWO_STAGE),
    "random_atoms": _grid({rate: RANDOM for rate in RATES}),
    "ridge": RIDGE,
    "story": STORY,
    "story_ridge": STORY_RIDGE,
    "story_random": STORY_RANDOM,
}


def _claim(name: str):
    return next(c for c in load_claims(SPECS)[0].claims if c.name == name)


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def test_keeping_most_of_ridge_needs_80_percent_beyond_seed_noise() -> None:
    """The coupled arm at 75% of ridge fails; at 80% give or take seed noise it is inconclusive."""
    claim = _claim("keeps_most_of_ridge_performance")
    low = {**COUPLED, 3e-2: _arm([0.56, 0.55, 0.57], [0.45, 0.44, 0.46], [0.9] * 3, [0.35] * 3)}
    outcome = evaluate(claim, dict(PAPER_OUTCOME, coupled=_grid(low)))
    assert not outcome.passed and not outcome.inconclusive
    noisy = {**COUPLED, 3e-2: _arm([0.56, 0.55, 0.57], [0.60, 0.40, 0.44], [0.9] * 3, [0.35] * 3)}
    assert evaluate(claim, dict(PAPER_OUTCOME, coupled=_grid(noisy))).inconclusive


def test_a_best_rate_at_the_grid_edge_is_inconclusive() -> None:
    claim = _claim("recovers_planted_atoms_better_than_two_stage")
    edge = {**COUPLED, 1e-1: _shift(COUPLED_BEST, 0.01)}
    outcome = evaluate(claim, dict(PAPER_OUTCOME, coupled=_grid(edge), coupled_lr=_grid(edge)))
    assert outcome.inconclusive and not outcome.passed


def test_the_headline_needs_the_floor() -> None:
    """Random atoms recovering the planted ones as well as the coupled SAE: the floor fails the claim."""
    claim = _claim("recovers_planted_atoms_better_than_two_stage")
    strong_random = _arm([0.19] * 3, [0.18] * 3, [0.95, 0.96, 0.97], [0.06] * 3)
    outcome = evaluate(claim, dict(PAPER_OUTCOME, random_atoms=_grid({rate: strong_random for rate in RATES})))
    assert not outcome.passed
