"""latent_debate: the QBAF semantics, the debate patterns and the analysis on a small causal LM
(components/interpretability/debate.py)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from components.interpretability.debate import (
    LatentDebate, answer_ids, claim_strength, dfquad, layer_disagreement, layer_log_odds, quadratic_energy)
from components.interpretability.statements import TrueFalseKnowledgeBase
from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM


def test_dfquad_by_hand() -> None:
    # supporters 0.5, 0.5 -> v_s = 1 - 0.25 = 0.75; attacker 0.6 -> v_a = 0.6; v_s > v_a:
    # sigma = 0.5 + 0.5 * 0.15 = 0.575; with the roles swapped: 0.5 - 0.5 * 0.15 = 0.425
    s, a = np.array([[0.5, 0.5, 0.0]]), np.array([[0.0, 0.0, 0.6]])
    assert dfquad(0.5, s, a)[0] == pytest.approx(0.575, abs=1e-12)
    assert dfquad(0.5, a, s)[0] == pytest.approx(0.425, abs=1e-12)
    assert dfquad(0.3, s, a)[0] == pytest.approx(0.3 + 0.7 * 0.15, abs=1e-12)  # tau + (1 - tau)(v_s - v_a)
    assert dfquad(0.3, np.zeros((1, 2)), np.zeros((1, 2)))[0] == 0.3             # no debate: the base score


def test_quadratic_energy_by_hand() -> None:
    # E = 0.5 + 0.5 - 0.2 = 0.8; h = 0.64 / 1.64; sigma = 0.5 + 0.5 * h
    s, a = np.array([[0.5, 0.5]]), np.array([[0.2, 0.0]])
    assert quadratic_energy(0.5, s, a)[0] == pytest.approx(0.5 + 0.5 * 0.64 / 1.64, abs=1e-12)
    assert quadratic_energy(0.5, a, s)[0] == pytest.approx(0.5 - 0.5 * 0.64 / 1.64, abs=1e-12)


def test_claim_strength_splits_supporters_from_attackers() -> None:
    # q = 0.9 supports with 0.8, q = 0.2 attacks with 0.6, q = 0.5 abstains
    q = np.array([[0.9, 0.2, 0.5]])
    assert claim_strength(q, "dfquad", 0.5)[0] == pytest.approx(0.5 + 0.5 * (0.8 - 0.6), abs=1e-12)
    # symmetric under q -> 1 - q: sigma -> 1 - sigma
    assert claim_strength(1 - q, "dfquad", 0.5)[0] == pytest.approx(1 - claim_strength(q, "dfquad", 0.5)[0], abs=1e-12)


def test_layer_disagreement_and_log_odds() -> None:
    q = np.array([[[1.0, 0.5], [0.0, 0.0]]])  # layer 0: firm TRUE and undecided; layer 1: firm FALSE
    assert layer_disagreement(q, np.array([True])).tolist() == [[0.25, 1.0]]
    assert layer_disagreement(q, np.array([False])).tolist() == [[0.75, 0.0]]
    odds = layer_log_odds(np.array([[[0.75]]]), np.array([False]))
    assert odds[0, 0] == pytest.approx(-np.log(3.0), abs=1e-12)


def _model_and_splits(seed: int = 0):
    torch.manual_seed(seed)
    model = CausalLM(31, partial(SoftmaxAttention, n_heads=2), d_model=16, n_layers=3, max_len=4)
    data = TrueFalseKnowledgeBase(num_entities=20, num_relations=3, num_values=5, num_val=400, num_test=400)
    data.setup()
    return model, {name: data.split(name) for name in ("val", "test")}


def test_answer_ids_read_from_labels() -> None:
    _, splits = _model_and_splits()
    assert answer_ids(splits["test"]) == (29, 30)
    broken = {**splits["test"], "label": torch.zeros_like(splits["test"]["label"])}
    with pytest.raises(ValueError, match=r"labelled 1 \(TRUE\) must share one answer token at the last position; "
                                         r"found none"):
        answer_ids(broken)
    mixed = {**splits["test"], "label": 1 - splits["test"]["label"]}  # each label's token is the other's
    assert answer_ids(mixed) == (30, 29)


def test_last_layer_lens_debate_is_the_model() -> None:
    """With the logit lens and the last block as the only debater, the one argument is the model's
    own answer: the surrogate agrees with it on every statement, and its disagreement is 1 - the
    model's confidence, so both flag errors with the same AUROC."""
    model, splits = _model_and_splits()
    out = LatentDebate(interpreter="logit_lens", layers=[3])(model, splits)
    assert out["agreement"] == 1.0
    assert out["disagreement_auroc"] == pytest.approx(out["confidence_auroc"], abs=1e-12)
    assert 0.0 < out["error_rate"] < 1.0 and out["model_accuracy"] == pytest.approx(1 - out["error_rate"])


def test_probe_debate_on_an_untrained_model_is_complete() -> None:
    model, splits = _model_and_splits()
    out = LatentDebate(interpreter="linear_probe", semantics="quadratic_energy", positions=2)(model, splits)
    assert set(out) == {"agreement", "model_accuracy", "error_rate", "confidence_auroc", "disagreement_auroc",
                        "mid_disagreement_auroc", "mid_disagreement_error", "mid_disagreement_correct",
                        "mid_disagreement_p", "debate_detector_auroc", "last_probe_auroc"}
    assert all(np.isfinite(v) for v in out.values())
    assert 0.5 <= out["agreement"] <= 1.0 and 0.0 <= out["mid_disagreement_p"] <= 1.0
    assert model.training  # restored after the analysis


def test_layers_resolution_and_errors() -> None:
    assert LatentDebate().resolve_layers(4) == ([1, 2, 3, 4], [2, 3])
    assert LatentDebate().resolve_layers(2) == ([1, 2], [1, 2])
    assert LatentDebate(layers=[0]).resolve_layers(4) == ([0], [0])
    with pytest.raises(ValueError, match=r"middle must be a subset of layers \[1, 2\], got \[3\]"):
        LatentDebate(layers=[1, 2], middle=[3])
    with pytest.raises(ValueError, match="layers go up to 5 but the model has 4 blocks"):
        LatentDebate(layers=[5]).resolve_layers(4)
    model, splits = _model_and_splits()
    with pytest.raises(ValueError, match="latent_debate needs a model with hidden_states()"):
        LatentDebate()(torch.nn.Linear(2, 2), splits)


def test_detector_patterns_are_cross_fitted() -> None:
    """The val arguments the detector is fit on come from probes fit on the other folds: fold by
    fold the same as argue() with that fold held out, and not the in-sample argue(fit, fit)."""
    rng = np.random.default_rng(0)
    n, d = 60, 5
    states = rng.normal(size=(n, 2, 1, d))
    decision = (states[:, 1, 0, 0] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    fit = {"states": states, "lens": np.zeros((n, 2, 1)), "decision": decision}
    debate = LatentDebate(folds=3)
    q = debate.cross_fit(fit)
    held = np.arange(20, 40)
    rest = np.setdiff1d(np.arange(n), held)
    alone = debate.argue({k: v[rest] for k, v in fit.items()}, {k: v[held] for k, v in fit.items()})
    np.testing.assert_allclose(q[held], alone)
    assert not np.allclose(q, debate.argue(fit, fit))
    with pytest.raises(ValueError, match="3 folds need at least 3 val statements"):
        debate.cross_fit({k: v[:2] for k, v in fit.items()})
