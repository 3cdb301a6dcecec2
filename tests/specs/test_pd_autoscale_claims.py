"""pd_autoscale's claims can fail: each holds on the outcome the paper reports (the learned policy
meets the SLO target with fewer GPUs than the grid's best threshold heuristic, which meets it too;
masks and cooldown cut scaling events) and its negative control, a real run swapped in (the policy
trained without the SLO penalty; the unmasked policy), makes it false. Also: the heuristic's best
setting at the grid's edge makes the headline inconclusive, and the static floor and the SLO
target each fail it. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/pd_autoscale"
UPS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _seeds(gpus: list[float], slo: list[float], events: list[float]) -> list[Numbers]:
    return [Numbers({"test/gpus": g, "test/slo_attainment": s, "test/scaling_events": e}, {"seed": i})
            for i, (g, s, e) in enumerate(zip(gpus, slo, events))]


def _grid(by_up: dict[float, tuple[float, float, float]]) -> list[Numbers]:
    """The heuristic's sweep (up-major, seeds 0-2 inside): (gpus, slo_attainment, return) per up."""
    return [Numbers({"test/gpus": g + 0.05 * s, "test/slo_attainment": a, "test/episode_return": r - 0.01 * s,
                     "test/scaling_events": 17.0}, {"model.up": up, "seed": s})
            for up, (g, a, r) in by_up.items() for s in range(3)]


# As in our simulator: more headroom (lower up) = more GPUs and fewer violations; the reward's best
# setting inside the grid (0.7, meeting the 95 % target with 9.1 GPUs).
HEURISTIC = {0.4: (12.9, 0.996, -15.7), 0.5: (11.5, 0.99, -14.4), 0.6: (10.3, 0.98, -13.3),
             0.7: (9.1, 0.96, -12.9), 0.8: (8.2, 0.93, -13.5), 0.9: (7.5, 0.88, -15.2)}

PAPER_OUTCOME = {
    "policy": _seeds([8.2, 8.4, 8.3], [0.96, 0.97, 0.96], [6.0, 7.0, 6.5]),
    "unmasked": _seeds([8.3, 8.5, 8.2], [0.96, 0.95, 0.96], [30.0, 28.0, 33.0]),
    "nopenalty": _seeds([2.0, 2.1, 2.0], [0.05, 0.07, 0.04], [3.0, 2.0, 3.0]),
    "heuristic": _grid(HEURISTIC),
    "static": _seeds([16.0, 16.0, 16.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]),
    "policy_long": _seeds([8.0, 8.2, 8.1], [0.96, 0.97, 0.96], [6.0, 7.0, 6.5]),
}


def _claim(name: str):
    return next(c for c in load_claims(SPECS)[0].claims if c.name == name)


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def test_the_heuristics_best_at_the_grid_edge_is_inconclusive() -> None:
    """A grid that stops before the heuristic's optimum (best at up = 0.9) decides nothing."""
    edge = {**HEURISTIC, 0.9: (7.5, 0.96, -12.0)}
    outcome = evaluate(_claim("policy_fewer_gpus_than_tuned_heuristic"), dict(PAPER_OUTCOME, heuristic=_grid(edge)))
    assert outcome.inconclusive and not outcome.passed


def test_the_headline_needs_the_slo_target_and_the_floor() -> None:
    claim = _claim("policy_fewer_gpus_than_tuned_heuristic")
    missed = dict(PAPER_OUTCOME, policy=_seeds([8.2, 8.4, 8.3], [0.93, 0.94, 0.92], [6.0, 7.0, 6.5]))
    assert not evaluate(claim, missed).passed
    cheap_static = dict(PAPER_OUTCOME, static=_seeds([6.0, 6.0, 6.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]))
    assert not evaluate(claim, cheap_static).passed


def test_no_fewer_gpus_within_seed_noise_is_not_fewer() -> None:
    claim = _claim("policy_fewer_gpus_than_tuned_heuristic")
    noisy = dict(PAPER_OUTCOME, policy=_seeds([7.5, 10.5, 8.9], [0.96, 0.97, 0.96], [6.0, 7.0, 6.5]))
    outcome = evaluate(claim, noisy)
    assert not outcome.passed
