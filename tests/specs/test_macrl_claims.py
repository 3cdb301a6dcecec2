"""macrl's claims can fail: each holds on the outcome the paper reports (MACRL well above
sparse-reward MA-SAC, not more than 0.10 below MA-SAC + HER on the easy setting, clearly above it
on the hard one; deeper residual networks better) and its negative control, a real run swapped in
(the baseline in place of the method), makes it false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/macrl"
RATES = (1e-3, 3e-3, 1e-2, 3e-2)


def _grid(success: dict[float, list[float]], length: dict[float, float]) -> list[Numbers]:
    """An lr sweep's trials in the sweep's order (rate-major, seeds inside); the episode length
    (the tuning criterion) per rate, nudged per seed so that rates do not tie."""
    return [Numbers({"test/success_rate": v, "test/episode_length": length[rate] + 0.01 * seed},
                    {"optimizer.lr": rate, "seed": seed})
            for rate in RATES for seed, v in enumerate(success[rate])]


def _seeds(values: list[float]) -> list[Numbers]:
    return [Numbers({"test/success_rate": v}, {"seed": s}) for s, v in enumerate(values)]


def _depth(by_depth: dict[int, list[float]]) -> list[Numbers]:
    return [Numbers({"test/success_rate": v}, {"model.depth": d, "task.critic.depth": d, "seed": s})
            for d in (4, 16) for s, v in enumerate(by_depth[d])]


MACRL = {1e-3: [0.5, 0.3, 0.4], 3e-3: [0.95, 0.97, 0.96], 1e-2: [0.99, 0.98, 1.0], 3e-2: [0.9, 0.8, 0.95]}
MACRL_LEN = {1e-3: 24.0, 3e-3: 9.0, 1e-2: 7.0, 3e-2: 10.0}
HER = {1e-3: [0.02, 0.01, 0.02], 3e-3: [0.1, 0.05, 0.08], 1e-2: [0.97, 0.99, 0.98], 3e-2: [0.9, 0.85, 0.9]}
HER_LEN = {1e-3: 29.8, 3e-3: 29.0, 1e-2: 8.0, 3e-2: 11.0}
SAC = {1e-3: [0.01, 0.0, 0.01], 3e-3: [0.0, 0.01, 0.01], 1e-2: [0.02, 0.02, 0.01], 3e-2: [0.01, 0.0, 0.0]}
SAC_LEN = {1e-3: 29.9, 3e-3: 29.9, 1e-2: 29.7, 3e-2: 29.95}
HER_HARD = {1e-3: [0.0, 0.0, 0.0], 3e-3: [0.01, 0.0, 0.02], 1e-2: [0.4, 0.05, 0.2], 3e-2: [0.1, 0.0, 0.05]}
HER_HARD_LEN = {1e-3: 30.0, 3e-3: 29.9, 1e-2: 25.0, 3e-2: 29.0}

PAPER_OUTCOME = {
    "random": _seeds([0.03, 0.04, 0.03]),
    "macrl": _grid(MACRL, MACRL_LEN),
    "sac_her": _grid(HER, HER_LEN),
    "sac": _grid(SAC, SAC_LEN),
    "macrl_hard": _grid(MACRL, MACRL_LEN),
    "sac_her_hard": _grid(HER_HARD, HER_HARD_LEN),
    "sac_hard": _grid(SAC, SAC_LEN),
    "depth": _depth({4: [0.3, 0.35, 0.32], 16: [0.5, 0.58, 0.52]}),
    "depth_her": _depth({4: [0.1, 0.2, 0.15], 16: [0.12, 0.15, 0.16]}),
}


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def _claim(name: str):
    return next(c for c in load_claims(SPECS)[0].claims if c.name == name)


def test_non_inferiority_fails_when_macrl_is_clearly_behind_her() -> None:
    behind = {**MACRL, 1e-2: [0.7, 0.72, 0.69]}
    outcome = evaluate(_claim("macrl_competitive_with_her"), dict(PAPER_OUTCOME, macrl=_grid(behind, MACRL_LEN)))
    assert not outcome.passed


def test_an_optimum_at_the_grid_edge_is_inconclusive() -> None:
    edge = {**MACRL_LEN, 3e-2: 5.0}
    outcome = evaluate(_claim("macrl_competitive_with_her"), dict(PAPER_OUTCOME, macrl=_grid(MACRL, edge)))
    assert not outcome.passed


def test_the_headline_needs_the_floor() -> None:
    outcome = evaluate(_claim("macrl_competitive_with_her"), dict(PAPER_OUTCOME, random=_seeds([1.0, 1.0, 1.0])))
    assert not outcome.passed
