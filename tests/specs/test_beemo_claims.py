"""beemo's claims can fail: each holds on the outcome the paper reports (paired + unpaired training
and behaviour-only pretraining each decoding better than the paired data alone, at each arm's
tuned rate, above the mean-velocity and behaviour-prior floors) and its run control, the same arm
trained on unpaired trajectories without dynamics (or the paired-only arm at paper scale), makes it
false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/beemo"
RATES = (1e-3, 3e-3, 1e-2, 3e-2)


def _arm(test: list[float], prior: float = -0.5) -> list[dict[str, float]]:
    return [{"val/r2": t, "test/r2": t, "test/r2_prior": prior} for t in test]


def _grid(best: list[float], best_rate: float = 3e-3) -> list[Numbers]:
    """An lr sweep's trials in the sweep's order (rate-major, seeds inside), best at `best_rate`."""
    by_rate = {rate: _arm(best if rate == best_rate else [t - 0.1 for t in best]) for rate in RATES}
    return [Numbers(metrics, {"optimizer.lr": rate, "seed": seed})
            for rate in RATES for seed, metrics in enumerate(by_rate[rate])]


PAIRED = [0.30, 0.25, 0.35]
PAPER_OUTCOME = {
    "paired": _grid(PAIRED),
    "mixture": _grid([0.40, 0.36, 0.44]),
    "pretrain": _grid([0.41, 0.34, 0.46], best_rate=3e-3),
    "mixture_shuffled": _grid([0.29, 0.27, 0.33]),
    "pretrain_shuffled": _grid([0.31, 0.24, 0.34]),
    "nwb_paired": _grid([0.50, 0.52, 0.49]),
    "nwb_mixture": _grid([0.58, 0.60, 0.57]),
    "nwb_pretrain": _grid([0.57, 0.59, 0.58]),
}


def _claim(name: str):
    return next(c for c in load_claims(SPECS)[0].claims if c.name == name)


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def test_a_gain_within_seed_noise_is_inconclusive() -> None:
    claim = _claim("unpaired_behavior_improves_decoding")
    outcome = evaluate(claim, dict(PAPER_OUTCOME, mixture=_grid([0.45, 0.20, 0.36])))
    assert outcome.inconclusive and not outcome.passed


def test_a_best_rate_at_the_grid_edge_is_inconclusive() -> None:
    claim = _claim("behavior_pretraining_beats_single_session")
    outcome = evaluate(claim, dict(PAPER_OUTCOME, pretrain=_grid([0.41, 0.34, 0.46], best_rate=3e-2)))
    assert outcome.inconclusive and not outcome.passed


def test_the_headline_needs_the_floor() -> None:
    """A decoder no better than its own behaviour prior without neural input fails the claim."""
    claim = _claim("unpaired_behavior_improves_decoding")
    strong_prior = [Numbers({"val/r2": n.metrics["val/r2"], "test/r2": n.metrics["test/r2"], "test/r2_prior": 0.6},
                            n.values) for n in PAPER_OUTCOME["mixture"]]
    outcome = evaluate(claim, dict(PAPER_OUTCOME, mixture=strong_prior))
    assert not outcome.passed
