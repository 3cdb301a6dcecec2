"""components/anomaly/metrics.py: AUROC and AP of raw scores, exact whatever the scores' range."""

from __future__ import annotations

import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score
from torchmetrics.functional.classification import binary_auroc

from components.anomaly.metrics import AnomalyAUROC, AnomalyAveragePrecision, rank_scale


def test_auroc_of_a_hand_computed_case_with_ties() -> None:
    metric = AnomalyAUROC()
    metric.update(torch.tensor([0.0, 5.0, 5.0]), {"y": torch.tensor([0, 1, 0])})
    metric.update(torch.tensor([9.0]), {"y": torch.tensor([1])})
    # pairs (anomaly, normal): (5, 0) 1, (5, 5) 1/2, (9, 0) 1, (9, 5) 1 -> 3.5 / 4
    assert float(metric.compute()) == pytest.approx(0.875)


def test_large_scores_keep_their_order_where_a_sigmoid_would_tie_them() -> None:
    scores = torch.tensor([20.0, 25.0, 30.0, 40.0, 18.0, 50.0])
    target = torch.tensor([0, 1, 0, 1, 0, 1])
    expected = roc_auc_score(target.numpy(), scores.numpy())  # 8 / 9
    saturated = float(binary_auroc(scores, target))  # torchmetrics' sigmoid of float32 logits: all 1.0
    assert saturated != pytest.approx(expected)
    metric = AnomalyAUROC()
    metric.update(scores, {"y": target})
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-6)  # torchmetrics returns float32


def test_matches_sklearn_on_random_scores_with_negative_values() -> None:
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(300, generator=generator) * 50 - 10
    target = (torch.rand(300, generator=generator) < 0.15 + 0.5 * (scores > 0)).long()
    auroc, ap = AnomalyAUROC(), AnomalyAveragePrecision()
    for part in (slice(0, 128), slice(128, 300)):
        batch = {"y": target[part]}
        auroc.update(scores[part].unsqueeze(1), batch)
        ap.update(scores[part], batch)
    assert float(auroc.compute()) == pytest.approx(roc_auc_score(target.numpy(), scores.numpy()), abs=1e-6)
    assert float(ap.compute()) == pytest.approx(average_precision_score(target.numpy(), scores.numpy()), abs=1e-6)


def test_rank_scale_is_in_unit_interval_and_keeps_ties() -> None:
    ranked = rank_scale(torch.tensor([3.0, -1.0, 3.0, 100.0]))
    assert ranked.tolist() == [0.5, 0.0, 0.5, 1.0]
    assert rank_scale(torch.tensor([2.0, 2.0])).tolist() == [0.0, 0.0]


def test_bad_shapes_and_compute_before_update() -> None:
    metric = AnomalyAUROC()
    with pytest.raises(ValueError, match=r"anomaly_auroc: outputs must be one anomaly score per row, \(N,\) or \(N, 1\), got \(4, 2\)"):
        metric.update(torch.zeros(4, 2), {"y": torch.zeros(4)})
    with pytest.raises(ValueError, match="anomaly_auroc: 4 scores but 3 labels"):
        metric.update(torch.zeros(4), {"y": torch.zeros(3)})
    with pytest.raises(RuntimeError, match="compute\\(\\) called before any update\\(\\)"):
        metric.compute()
