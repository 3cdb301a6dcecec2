"""The laplace_rescaling analysis per prior: what each run of gamma_laplace's claims logs."""

import pytest
import torch

from components.bayes.invariance import LaplaceRescaling
from components.models.mlp import MLP


@pytest.fixture(scope="module")
def trained():
    """A 3-6-5-2 ReLU MLP fitted to XOR-like data, and its train/test splits (float32, as a run has)."""
    torch.manual_seed(0)
    x = torch.randn(80, 3)
    y = (x[:, 0] * x[:, 1] > 0).long()
    model = MLP(3, 2, hidden=[6, 5])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(150):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x[:60]), y[:60]).backward()
        optimizer.step()
    return model.eval(), {"train": {"x": x[:60], "y": y[:60]}, "test": {"x": x[60:], "y": y[60:]}}


SHARED = {"function_max_diff", "evidence_spread", "evidence_std", "variance_spread_rel", "prior_precision_ratio",
          "log_evidence", "prior_precision", "mean_variance", "grid_evidence_spread", "grid_variance_spread_rel"}
GAMMA_ONLY = {"selected_gamma", "selected_gamma_spread", "gamma_evidence_range", "evidence_gain_over_balanced"}


def curve(gammas: list[float]) -> set[str]:
    return {f"log_evidence_gamma{g:g}" for g in gammas}


def test_isotropic_varies_and_its_grid_is_itself(trained):
    results = LaplaceRescaling(num_rescalings=3, prior="isotropic")(*trained)
    assert set(results) == SHARED
    assert results["evidence_spread"] > 1.0 and results["prior_precision_ratio"] > 1.5
    assert results["grid_evidence_spread"] == results["evidence_spread"]


def test_gamma_canonical_is_invariant_for_every_gamma_and_selects_the_best(trained):
    gammas = [0.0, 0.5, 1.0]
    results = LaplaceRescaling(num_rescalings=3, prior="gamma_canonical", gammas=gammas)(*trained)
    assert set(results) == SHARED | GAMMA_ONLY | curve(gammas)
    assert results["grid_evidence_spread"] < 1e-6 and results["grid_variance_spread_rel"] < 1e-6
    assert results["selected_gamma"] in gammas and results["selected_gamma_spread"] == 0.0
    fixed = [LaplaceRescaling(num_rescalings=1, prior="gamma_canonical", gammas=[g])(*trained) for g in gammas]
    assert results["log_evidence"] == pytest.approx(max(f["log_evidence"] for f in fixed), abs=1e-9)
    balanced = fixed[1]
    assert results["evidence_gain_over_balanced"] == pytest.approx(
        results["log_evidence"] - balanced["log_evidence"], abs=1e-9)
    assert balanced["evidence_gain_over_balanced"] == 0.0 and balanced["gamma_evidence_range"] == 0.0
    assert [results[f"log_evidence_gamma{g:g}"] for g in gammas] == pytest.approx(
        [f["log_evidence"] for f in fixed], abs=1e-9), "the curve is each gamma's own evidence"


def test_the_grid_may_run_past_the_family(trained):
    """gammas beyond [0, 1] continue the family's formula: still invariant, and on the curve."""
    gammas = [-0.3, 0.5, 1.3]
    results = LaplaceRescaling(num_rescalings=2, prior="gamma_canonical", gammas=gammas)(*trained)
    assert results["grid_evidence_spread"] < 1e-6 and results["grid_variance_spread_rel"] < 1e-6
    assert {"log_evidence_gamma-0.3", "log_evidence_gamma1.3"} <= set(results)
    assert results["log_evidence"] == max(results[k] for k in curve(gammas))


def test_both_prefixes_the_gamma_canonical_metrics(trained):
    results = LaplaceRescaling(num_rescalings=1, gammas=[0.5])(*trained)
    assert set(results) == SHARED | {f"canonical_{k}" for k in SHARED - {"function_max_diff"} | GAMMA_ONLY | curve([0.5])}


@pytest.mark.parametrize("kwargs, message", [
    ({"prior": "flat"}, "prior must be 'both', 'isotropic' or 'gamma_canonical', got 'flat'"),
    ({"gammas": [0.5, float("nan")]}, "gammas must be distinct finite numbers, got [0.5, nan]"),
    ({"gammas": [0.5, 0.5]}, "gammas must be distinct finite numbers, got [0.5, 0.5]"),
], ids=["prior", "gamma-nan", "gamma-twice"])
def test_laplace_rescaling_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as error:
        LaplaceRescaling(**kwargs)
    assert str(error.value) == message
