import numpy as np
import pytest
import torch
from sklearn import metrics as skm

from components.metrics.standard import (
    AUROC, F1, Accuracy, MeanAbsoluteError, MeanSquaredError, R2Score, RootMeanSquaredError,
)

rng = np.random.default_rng(0)
MULTI_LOGITS = rng.normal(size=(40, 4)).astype(np.float32)
MULTI_Y = rng.integers(0, 4, size=40)
MULTI_Y[:4] = [0, 1, 2, 3]
BIN_LOGIT = rng.normal(size=(40, 1)).astype(np.float32)
BIN_Y = rng.integers(0, 2, size=40)
BIN_Y[:2] = [0, 1]


def softmax(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def run(metric, logits, y, batches=3):
    for part_x, part_y in zip(np.array_split(logits, batches), np.array_split(y, batches)):
        metric.update(torch.from_numpy(part_x), {"y": torch.from_numpy(part_y)})
    return float(metric.compute())


MULTI_PRED = MULTI_LOGITS.argmax(1)
BIN_PRED = (BIN_LOGIT[:, 0] > 0).astype(int)
TWO_COL = np.concatenate([np.zeros_like(BIN_LOGIT), BIN_LOGIT], axis=1)  # softmax[:,1] == sigmoid


@pytest.mark.parametrize(
    "metric, logits, y, expected",
    [
        (Accuracy(), MULTI_LOGITS, MULTI_Y, skm.accuracy_score(MULTI_Y, MULTI_PRED)),
        (Accuracy(average="macro"), MULTI_LOGITS, MULTI_Y, skm.balanced_accuracy_score(MULTI_Y, MULTI_PRED)),
        (Accuracy(), BIN_LOGIT, BIN_Y, skm.accuracy_score(BIN_Y, BIN_PRED)),
        (Accuracy(), BIN_LOGIT[:, 0], BIN_Y, skm.accuracy_score(BIN_Y, BIN_PRED)),
        (F1(), MULTI_LOGITS, MULTI_Y, skm.f1_score(MULTI_Y, MULTI_PRED, average="macro")),
        (F1(average="micro"), MULTI_LOGITS, MULTI_Y, skm.f1_score(MULTI_Y, MULTI_PRED, average="micro")),
        (F1(), BIN_LOGIT, BIN_Y, skm.f1_score(BIN_Y, BIN_PRED, average="macro")),
        (AUROC(), BIN_LOGIT, BIN_Y, skm.roc_auc_score(BIN_Y, BIN_LOGIT[:, 0])),
        (AUROC(), TWO_COL, BIN_Y, skm.roc_auc_score(BIN_Y, BIN_LOGIT[:, 0])),
        (AUROC(), MULTI_LOGITS, MULTI_Y,
         skm.roc_auc_score(MULTI_Y, softmax(MULTI_LOGITS), multi_class="ovr", average="macro")),
    ],
    ids=["acc", "acc-macro", "acc-single-logit", "acc-flat-logit", "f1-macro", "f1-micro", "f1-binary",
         "auroc-single-logit", "auroc-two-columns", "auroc-multiclass"],
)
def test_metric_matches_sklearn(metric, logits, y, expected):
    assert run(metric, logits, y) == pytest.approx(expected, abs=1e-6)


def test_metric_reset_and_forward():
    metric = Accuracy()
    run(metric, MULTI_LOGITS, MULTI_Y)
    metric.reset()
    batch_value = metric(torch.from_numpy(MULTI_LOGITS[:10]), {"y": torch.from_numpy(MULTI_Y[:10])})
    assert float(batch_value) == pytest.approx(skm.accuracy_score(MULTI_Y[:10], MULTI_PRED[:10]))
    assert float(metric.compute()) == pytest.approx(float(batch_value))


def test_mse_matches_sklearn():
    pred = rng.normal(size=(30, 1)).astype(np.float32)
    y = rng.normal(size=30).astype(np.float32)
    assert run(MeanSquaredError(), pred, y) == pytest.approx(skm.mean_squared_error(y, pred[:, 0]), rel=1e-6)


@pytest.mark.parametrize(("metric", "expected"), [
    (MeanAbsoluteError, skm.mean_absolute_error),
    (RootMeanSquaredError, lambda y, p: np.sqrt(skm.mean_squared_error(y, p))),
    (R2Score, skm.r2_score),
])
@pytest.mark.parametrize("targets", [1, 3])
def test_regression_metrics_match_sklearn_over_every_value(metric, expected, targets):
    """MAE, RMSE and R^2 (torchmetrics) pool every example and target; (N, 1) outputs meet (N,) targets."""
    y = rng.normal(size=(30, targets)).astype(np.float32)
    pred = (y + rng.normal(scale=0.5, size=y.shape)).astype(np.float32)
    target = y[:, 0] if targets == 1 else y
    assert run(metric(), pred, target) == pytest.approx(expected(y.reshape(-1), pred.reshape(-1)), rel=1e-5)


def test_regression_metric_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match=r"^rmse: outputs of shape \(4, 2\) do not match targets of shape \(4,\)$"):
        RootMeanSquaredError().update(torch.zeros(4, 2), {"y": torch.zeros(4)})


def test_width_change_is_an_error():
    metric = F1()
    metric.update(torch.randn(4, 3), {"y": torch.tensor([0, 1, 2, 0])})
    with pytest.raises(ValueError) as error:
        metric.update(torch.randn(4, 5), {"y": torch.tensor([0, 1, 2, 0])})
    assert str(error.value) == "f1: outputs have 5 columns, but earlier updates had 3"


@pytest.mark.parametrize("metric, name", [(Accuracy(), "accuracy"), (AUROC(), "auroc"), (MeanSquaredError(), "mse")])
def test_compute_before_update_is_an_error(metric, name):
    with pytest.raises(RuntimeError) as error:
        metric.compute()
    assert str(error.value) == f"{name}: compute() called before any update() since the last reset()"


def test_bad_average():
    with pytest.raises(ValueError) as error:
        Accuracy(average="weighted")
    assert str(error.value) == "average must be one of ['micro', 'macro'], got 'weighted'"
