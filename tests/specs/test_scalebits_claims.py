"""scalebits's claims can fail: each holds on the outcome the paper reports (the dynamic
allocation well ahead of uniform precision, ahead of the static allocation and of the reordered
uniform and contiguous arms on every seed) and its negative control, a real stage swapped in
(random mixed precision in the dynamic allocation's place), makes it false; a gain within the
seeds' noise, or one that removes less than half of uniform's excess loss, does not pass; the
paper-scale spec stops at once without its assets, naming them (~10 s); a shrunk seed of
seeds.yaml runs every arm end to end (~40 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/scalebits"
FP = (1.95, 1.94, 2.00, 1.98, 1.91)


def _seeds(**excess: tuple[float, ...]) -> list[Numbers]:
    """Per seed, each stage's test loss = the seed's full-precision loss + that stage's excess."""
    out = []
    for i, fp in enumerate(FP):
        values = {}
        for stage, add in excess.items():
            values[f"{stage}:test/loss"] = fp + add[i]
            values[f"{stage}:test/fp_loss"] = fp
            values[f"{stage}:test/prior_loss"] = 3.24
        out.append(Numbers(values))
    return out


PAPER = dict(
    uniform=(0.075, 0.050, 0.051, 0.073, 0.070),
    uniform_reordered=(0.067, 0.066, 0.038, 0.080, 0.070),
    static=(0.040, 0.023, 0.034, 0.024, 0.037),
    dynamic=(0.020, 0.012, 0.015, 0.014, 0.021),
    random=(0.091, 0.190, 0.092, 0.140, 0.089),
    dynamic_contiguous=(0.047, 0.031, 0.032, 0.024, 0.032),
)
TINY = [c for c in load_claims(SPECS)[0].claims if c.tier != "full"]


@pytest.mark.parametrize("claim", TINY, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, {"seeds": _seeds(**PAPER)})


def test_a_gain_that_removes_less_than_half_of_uniforms_excess_is_not_wide() -> None:
    claim = next(c for c in TINY if c.name == "dynamic_beats_uniform_by_a_wide_margin")
    narrow = dict(PAPER, dynamic=(0.045, 0.032, 0.034, 0.045, 0.044))   # ~40% of the excess removed
    outcome = evaluate(claim, {"seeds": _seeds(**narrow)})
    assert outcome.passed is False and not outcome.inconclusive


def test_a_static_gap_within_the_seeds_noise_is_inconclusive() -> None:
    claim = next(c for c in TINY if c.name == "dynamic_beats_static_sensitivity")
    noisy = dict(PAPER, static=(0.030, 0.005, 0.025, 0.010, 0.030))
    outcome = evaluate(claim, {"seeds": _seeds(**noisy)})
    assert outcome.inconclusive and not outcome.passed


def test_without_its_assets_the_paper_scale_spec_names_them(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from framework.runner import run

    monkeypatch.delenv("EXPSPEC_WIKITEXT2_LLAMA3_TOKENS", raising=False)
    monkeypatch.delenv("EXPSPEC_LLAMA31_8B_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"EXPSPEC_(WIKITEXT2_LLAMA3_TOKENS|LLAMA31_8B_DIR).*Nothing is downloaded"):
        run(SPECS / "llama31_8b.yaml", ["hardware.accelerator=cpu"])


def test_a_shrunk_seed_runs_every_arm_at_the_budget(tracked: str) -> None:
    """seeds.yaml end to end with a 3-step LM: every quantization stage logs its loss at 3 bits on
    average, the allocations mix widths, and uniform is all 3-bit."""
    from framework.runner import run

    result = run(SPECS / "seeds.yaml", ["trainer.max_epochs=1", "trainer.limit_train_batches=3",
                                         "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"])
    m = result.metrics
    for stage in ("uniform", "uniform_reordered", "static", "dynamic", "random", "dynamic_contiguous"):
        assert m[f"{stage}:test/avg_bits"] == 3.0 and m[f"{stage}:test/loss"] > 0
    assert m["uniform:test/share_3bit"] == 1.0 and m["dynamic:test/share_4bit"] > 0
    assert m["dynamic:test/estimates"] == 12.0
