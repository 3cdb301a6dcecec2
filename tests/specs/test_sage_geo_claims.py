"""sage_geo's claims can fail: each holds on the outcome the paper reports (Chamfer distance on
unseen target scenes reduced by 20-42% by adaptation from unlabeled video, the source error held by
the anchor-data replay, each supervision term needed) and its negative control, a real run swapped
in (the unadapted model, or the ablated arm, in place of SAGE), makes it false. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/sage_geo"
UNADAPTED = [0.62, 0.60, 0.64]
SOURCE_UNADAPTED = [0.23, 0.24, 0.22]


def _arm(chamfer: list[float], source: list[float]) -> list[Numbers]:
    """An adaptation sweep over seeds 0, 1, ...: target and source Chamfer, and the relative changes
    against each seed's unadapted model, as the task logs them."""
    n = len(chamfer)
    unadapted, source_unadapted = (UNADAPTED * 4)[:n], (SOURCE_UNADAPTED * 4)[:n]
    return [Numbers({"test/chamfer": c, "test/source_chamfer": s, "test/chamfer_unadapted": u,
                     "test/source_chamfer_unadapted": su, "test/chamfer_mean_scene": 0.71,
                     "test/chamfer_reduction": 1 - c / u, "test/source_chamfer_rise": s / su - 1},
                    {"seed": seed})
            for seed, (c, s, u, su) in enumerate(zip(chamfer, source, unadapted, source_unadapted))]


PAPER_OUTCOME = {
    "pretrained": _arm(UNADAPTED, SOURCE_UNADAPTED),
    "before": _arm(UNADAPTED, SOURCE_UNADAPTED),
    "full": _arm([0.40, 0.39, 0.42], [0.230, 0.241, 0.221]),            # about 35% lower, source held
    "no_anchor": _arm([0.58, 0.57, 0.60], [0.22, 0.23, 0.21]),
    "no_dense": _arm([0.45, 0.44, 0.47], [0.23, 0.24, 0.22]),
    "no_select": _arm([0.46, 0.45, 0.49], [0.23, 0.24, 0.22]),
    "no_replay": _arm([0.33, 0.32, 0.36], [0.50, 0.55, 0.48]),
    "full10": _arm([0.40, 0.39, 0.42] * 3 + [0.41], [0.230, 0.241, 0.221] * 3 + [0.23]),
    "before10": _arm(UNADAPTED * 3 + [0.61], SOURCE_UNADAPTED * 3 + [0.23]),
    "paper_full": _arm([0.40, 0.39, 0.42], [0.23, 0.24, 0.22]),
    "paper_before": _arm(UNADAPTED, SOURCE_UNADAPTED),
}
CLAIMS = load_claims(SPECS)[0].claims


@pytest.mark.parametrize("claim", [c for c in CLAIMS if c.control.is_run], ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, PAPER_OUTCOME)


def test_every_claim_has_a_run_control() -> None:
    assert [c.name for c in CLAIMS if not c.control.is_run] == []


def test_a_reduction_straddling_the_papers_bar_is_inconclusive() -> None:
    """Reductions of 14%, 25% and 22% (mean above 20%, interval across it) decide nothing."""
    claim = next(c for c in CLAIMS if c.name == "chamfer_reduced_on_unseen_target")
    straddling = _arm([0.62 * 0.86, 0.60 * 0.75, 0.64 * 0.78], SOURCE_UNADAPTED)
    outcome = evaluate(claim, dict(PAPER_OUTCOME, full=straddling))
    assert not outcome.passed and outcome.inconclusive


def test_a_reduction_below_the_bar_is_false() -> None:
    claim = next(c for c in CLAIMS if c.name == "chamfer_reduced_on_unseen_target")
    small = _arm([0.62 * 0.90, 0.60 * 0.91, 0.64 * 0.89], SOURCE_UNADAPTED)
    outcome = evaluate(claim, dict(PAPER_OUTCOME, full=small))
    assert not outcome.passed and not outcome.inconclusive


def test_the_headline_needs_the_mean_scene_floor() -> None:
    """An adapted model no better than predicting the mean scene fails, whatever its reduction."""
    claim = next(c for c in CLAIMS if c.name == "chamfer_reduced_on_unseen_target")
    full = _arm([0.40, 0.39, 0.42], [0.230, 0.241, 0.221])
    for trial in full:
        trial.metrics["test/chamfer_mean_scene"] = 0.30
    assert not evaluate(claim, dict(PAPER_OUTCOME, full=full)).passed
