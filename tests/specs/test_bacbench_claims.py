"""bacbench's claims can fail: each holds on the outcome the paper reports (protein-level models
competitive at gene level, genomic-context models ahead on a multi-gene problem) and its negative
control, a real run swapped in (the untrained protein encoder; the context model on genomes whose
gene order was shuffled), makes it false; a margin inside the seeds' noise is inconclusive, and a
context model at chance fails its floor. Fast: no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.claims import load_claims
from framework.claims.expressions import Numbers, evaluate
from claim_outcomes import holds_and_its_control_fails

SPECS = Path(__file__).resolve().parents[2] / "specs/bacbench"


def _arm(gene: list[float], auroc: list[float]) -> list[Numbers]:
    return [Numbers({"test/gene_function_accuracy": g, "test/phenotype_auroc": a}, {"seed": seed})
            for seed, (g, a) in enumerate(zip(gene, auroc))]


PAPER_OUTCOME = {
    "protein": _arm([0.90, 0.91, 0.89], [0.50, 0.52, 0.49]),
    "context": _arm([0.88, 0.90, 0.89], [0.97, 0.95, 0.98]),
    "pooled": _arm([0.80, 0.82, 0.79], [0.51, 0.53, 0.50]),
    "context_shuffled": _arm([0.87, 0.89, 0.88], [0.52, 0.50, 0.54]),
    "protein_untrained": _arm([0.40, 0.42, 0.39], [0.50, 0.49, 0.51]),
    "protein_scrambled": _arm([0.27, 0.26, 0.28], [0.50, 0.51, 0.49]),
}
CLAIMS = {c.name: c for c in load_claims(SPECS)[0].claims}


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_each_claim_holds_on_the_papers_outcome_and_fails_on_its_run_control(name: str) -> None:
    holds_and_its_control_fails(CLAIMS[name], PAPER_OUTCOME)


def test_a_context_gain_within_seed_noise_is_inconclusive() -> None:
    noisy = _arm([0.88, 0.90, 0.89], [0.95, 0.58, 0.70])
    outcome = evaluate(CLAIMS["context_excels_on_multi_gene"], dict(PAPER_OUTCOME, context=noisy))
    assert not outcome.passed and outcome.inconclusive


def test_a_protein_model_far_behind_the_context_model_is_not_competitive() -> None:
    weak = _arm([0.60, 0.62, 0.61], [0.50, 0.52, 0.49])
    outcome = evaluate(CLAIMS["protein_competitive_on_gene_level"], dict(PAPER_OUTCOME, protein=weak))
    assert not outcome.passed and not outcome.inconclusive


def test_a_context_model_at_chance_fails_its_floor() -> None:
    chance = _arm([0.88, 0.90, 0.89], [0.50, 0.51, 0.49])
    both_low = dict(PAPER_OUTCOME, context=chance, pooled=_arm([0.8, 0.8, 0.8], [0.30, 0.31, 0.29]))
    outcome = evaluate(CLAIMS["context_excels_on_multi_gene"], both_low)
    assert not outcome.passed and outcome.floor_passed is not True  # at chance: undecided, never passed


def test_a_protein_lm_no_better_than_its_untrained_encoder_fails_the_floor() -> None:
    """The floor asks the protein LM to beat its untrained encoder: an LM that learned nothing the
    random encoder does not already show is not counted as competitive."""
    untrained_as_good = _arm([0.89, 0.90, 0.90], [0.50, 0.49, 0.51])
    outcome = evaluate(CLAIMS["protein_competitive_on_gene_level"], dict(PAPER_OUTCOME, protein_untrained=untrained_as_good))
    assert not outcome.passed and outcome.floor_passed is not True
