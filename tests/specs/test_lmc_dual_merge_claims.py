"""lmc_dual_merge's claims can fail: each holds on the outcome the paper reports (a near-zero
barrier after dual alignment, below one-sided learned alignment and weight matching, a small
fraction of the unaligned barrier at every alpha, accuracy kept along the path) and its negative
control, a real stage swapped in (the unaligned path, or weight matching, in the dual
alignment's place), makes it false; a dual-vs-one-sided gap within the seeds' noise is
inconclusive, and a barrier of 15% of the endpoint loss is not near zero; the heavier Fashion-MNIST
spec stops at once without its files, naming them (~10 s). Fast otherwise: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from claim_outcomes import holds_and_its_control_fails
from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate

SPECS = Path(__file__).resolve().parents[2] / "specs/lmc_dual_merge"
ENDPOINT = (0.058, 0.050, 0.064)
ACCURACY = (0.975, 0.980, 0.978)
# per arm: the excess-loss bump's height at alpha = 1/2 (the barrier), per seed
PAPER = dict(none=(0.48, 0.55, 0.59), weight_matching=(0.020, 0.012, 0.016),
             one_sided=(0.006, 0.004, 0.007), dual=(0.0010, 0.0005, 0.0008))


def _seeds(arms: dict[str, tuple[float, ...]]) -> list[Numbers]:
    out = []
    for i, endpoint in enumerate(ENDPOINT):
        values = {}
        for arm, heights in arms.items():
            h = heights[i]
            for k in range(11):
                alpha = k / 10
                values[f"{arm}:test/excess_a{k:02d}"] = 4 * h * alpha * (1 - alpha)
            values[f"{arm}:test/barrier"] = h
            values[f"{arm}:test/endpoint_loss"] = endpoint
            values[f"{arm}:test/endpoint_accuracy"] = ACCURACY[i]
            values[f"{arm}:test/min_accuracy"] = ACCURACY[i] - 0.4 * h
        out.append(Numbers(values))
    return out


CLAIMS = load_claims(SPECS)[0].claims
TINY = [c for c in CLAIMS if c.tier != "full"]


def _claim(name: str):
    return next(c for c in CLAIMS if c.name == name)


@pytest.mark.parametrize("claim", TINY, ids=lambda c: c.name)
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(claim) -> None:
    holds_and_its_control_fails(claim, {"seeds": _seeds(PAPER)})


def test_the_full_tier_claim_holds_on_the_papers_outcome_and_fails_on_its_control() -> None:
    holds_and_its_control_fails(_claim("fashion_dual_near_zero_and_below_one_sided"), {"fashion": _seeds(PAPER)})


def test_a_dual_gain_within_the_seeds_noise_is_inconclusive() -> None:
    noisy = dict(PAPER, one_sided=(0.0030, 0.0001, 0.0020))
    outcome = evaluate(_claim("dual_below_learned_one_sided"), {"seeds": _seeds(noisy)})
    assert outcome.inconclusive and not outcome.passed


def test_a_barrier_of_fifteen_percent_of_the_endpoint_loss_is_not_near_zero() -> None:
    high = dict(PAPER, dual=tuple(0.15 * e for e in ENDPOINT))
    outcome = evaluate(_claim("dual_barrier_near_zero"), {"seeds": _seeds(high)})
    assert outcome.passed is False and not outcome.inconclusive


def test_without_its_files_the_fashion_spec_names_them(tracked: str, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from framework.runner import run

    monkeypatch.setenv("EXPSPEC_FASHION_MNIST_DIR", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match=r"Fashion-MNIST files not found.*Nothing is downloaded"):
        run(SPECS / "fashion.yaml", [f"data.root={tmp_path / 'absent'}"])
