"""lmi_observer's claims can fail: each holds on the outcome the paper reports (two-stage certified
with far fewer SDP iterations and less CPU time, more accurate than Luenberger and no worse than
the direct method, faster to a certified observer as good as Luenberger; pre-training alone not
certified) and its negative control, a real run swapped in (mostly the pre-trained stage in place
of the LMI stage), makes it false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate

SPECS = Path(__file__).resolve().parents[2] / "specs/lmi_observer"

STAGES = {   # per stage: what the paper reports, in this benchmark's units
    "lmi": {"certified": 1.0, "cert_solver": 1.0, "cert_eig_margin": 0.01, "sdp_iterations": 35.0,
            "cpu_seconds": 6.0, "rmse": 0.55, "reached_target": 1.0, "cpu_seconds_to_target": 1.0},
    "pretrain": {"certified": 0.0, "cert_solver": 0.0, "cert_eig_margin": -1.0, "sdp_iterations": 0.0,
                 "cpu_seconds": 4.5, "rmse": 0.54, "reached_target": 0.0, "cpu_seconds_to_target": 4.5},
    "direct": {"certified": 1.0, "cert_solver": 1.0, "cert_eig_margin": 0.001, "sdp_iterations": 2100.0,
               "cpu_seconds": 24.0, "rmse": 0.555, "reached_target": 1.0, "cpu_seconds_to_target": 2.0},
    "narrow_grid": {"certified": 0.0, "rmse": 1.45},
    "untrained": {"certified": 0.0, "cert_solver": 0.0, "cert_eig_margin": -0.5, "sdp_iterations": 0.0,
                  "cpu_seconds": 0.0, "rmse": 1.45, "reached_target": 0.0, "cpu_seconds_to_target": 0.0},
}


def _seed(shift: float) -> Numbers:
    values = {}
    for stage, metrics in STAGES.items():   # every stage's test reports the same baselines
        values.update({f"{stage}:test/rmse_luenberger": 0.70 + shift, f"{stage}:test/rmse_open_loop": 1.45 + shift,
                       f"{stage}:test/luenberger_at_edge": 0.0})
        for key, value in metrics.items():
            values[f"{stage}:test/{key}"] = value + shift * (key in ("rmse", "cpu_seconds", "sdp_iterations"))
    values["lmi:test/cpu_seconds_to_target"] = 1.0 + shift
    values["narrow_grid:test/luenberger_certified"] = 1.0   # a faster gain, certified and less accurate
    values["lmi:test/luenberger_certified"] = 0.0
    values["narrow_grid:test/luenberger_at_edge"] = 1.0     # its grid stops where the full grid's optimum lies beyond
    return Numbers(values)


PAPER_OUTCOME = {"seeds": [_seed(0.0), _seed(0.01), _seed(-0.01)], "wide": [_seed(s) for s in (0, .01, -.01, .02, 0)]}


@pytest.mark.parametrize("claim", load_claims(SPECS)[0].claims, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_control(claim) -> None:
    outcome = evaluate(claim, PAPER_OUTCOME)
    assert outcome.passed and not outcome.error and not outcome.inconclusive, (outcome.numbers, outcome.error)
    assert outcome.control_passed is False and not outcome.control_error, outcome.control_error


def test_the_headline_control_is_the_pretrained_observer_and_fails_on_the_certificate() -> None:
    """The headline's run control swaps in stage pretrain (no LMI stage): it is as accurate and
    needs no SDP, so only the certificate makes it false."""
    claim = next(c for c in load_claims(SPECS)[0].claims if c.kind == "headline")
    assert claim.control.is_run
    outcome = evaluate(claim, PAPER_OUTCOME)
    assert outcome.control_passed is False
    certified_pretrain = {"seeds": [Numbers({**n.metrics, "pretrain:test/certified": 1.0})
                                    for n in PAPER_OUTCOME["seeds"]], "wide": PAPER_OUTCOME["wide"]}
    assert evaluate(claim, certified_pretrain).control_passed is True
