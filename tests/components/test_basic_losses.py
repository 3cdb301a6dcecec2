import pytest
import torch
import torch.nn.functional as F

from components.losses.basic import BCE, MSE, CrossEntropy, WeightedSum, snake_case

torch.manual_seed(0)
LOGITS = torch.randn(6, 3)
LABELS = torch.tensor([0, 2, 1, 1, 0, 2])
PRED = torch.randn(6, 1)
TARGET = torch.randn(6)
BINARY = torch.tensor([0, 1, 1, 0, 1, 0])


@pytest.mark.parametrize(
    "loss, outputs, y, expected",
    [
        (CrossEntropy(), LOGITS, LABELS, F.cross_entropy(LOGITS, LABELS)),
        (CrossEntropy(label_smoothing=0.1), LOGITS, LABELS, F.cross_entropy(LOGITS, LABELS, label_smoothing=0.1)),
        (MSE(), PRED, TARGET, F.mse_loss(PRED[:, 0], TARGET)),
        (MSE(), PRED[:, 0], TARGET, F.mse_loss(PRED[:, 0], TARGET)),
        (BCE(), PRED, BINARY, F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float())),
        (BCE(pos_weight=3.0), PRED[:, 0], BINARY,
         F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float(), pos_weight=torch.tensor(3.0))),
    ],
    ids=["ce", "ce-smoothing", "mse-column", "mse-flat", "bce-column", "bce-pos-weight"],
)
def test_loss_matches_functional(loss, outputs, y, expected):
    value = loss(outputs, {"y": y})
    assert value.shape == ()
    assert torch.allclose(value, expected)


def test_loss_is_unweighted():
    assert torch.allclose(CrossEntropy(weight=5.0)(LOGITS, {"y": LABELS}), F.cross_entropy(LOGITS, LABELS))


def test_mse_shape_mismatch():
    with pytest.raises(ValueError) as error:
        MSE()(torch.randn(6, 2), {"y": TARGET})
    assert str(error.value) == "mse: outputs of shape (6, 2) do not match targets of shape (6,)"


def test_weighted_sum_is_weights_dot_terms():
    loss = WeightedSum([CrossEntropy(weight=0.5), CrossEntropy(weight=2.0, label_smoothing=0.2)])
    outputs = torch.randn(6, 3, requires_grad=True)
    values = [F.cross_entropy(outputs, LABELS), F.cross_entropy(outputs, LABELS, label_smoothing=0.2)]
    total = loss(outputs, {"y": LABELS})
    assert torch.allclose(total, 0.5 * values[0] + 2.0 * values[1])
    assert list(loss.last_terms) == ["cross_entropy", "cross_entropy_1"]
    assert torch.allclose(loss.last_terms["cross_entropy_1"], values[1])
    assert not loss.last_terms["cross_entropy"].requires_grad
    total.backward()
    assert outputs.grad is not None


def test_weighted_sum_names_and_values():
    loss = WeightedSum([MSE(weight=2.0), BCE(weight=0.25), MSE(), MSE()])
    total = loss(PRED, {"y": BINARY.float()})
    mse = F.mse_loss(PRED[:, 0], BINARY.float())
    bce = F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float())
    assert torch.allclose(total, 2.0 * mse + 0.25 * bce + mse + mse)
    assert list(loss.last_terms) == ["mse", "bce", "mse_1", "mse_2"]
    assert torch.allclose(loss.last_terms["bce"], bce)


def test_weighted_sum_nests():
    inner = WeightedSum([MSE(weight=2.0)], weight=3.0)
    outer = WeightedSum([inner, BCE()])
    total = outer(PRED, {"y": BINARY.float()})
    mse = F.mse_loss(PRED[:, 0], BINARY.float())
    bce = F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float())
    assert torch.allclose(total, 3.0 * 2.0 * mse + bce)
    assert list(outer.last_terms) == ["weighted_sum", "bce"]


def test_weighted_sum_rejects_empty_and_weightless_terms():
    with pytest.raises(ValueError) as error:
        WeightedSum([])
    assert str(error.value) == "terms must hold at least one loss, got []"
    with pytest.raises(ValueError) as error:
        WeightedSum([torch.nn.CrossEntropyLoss()])
    assert str(error.value) == "terms[0] (CrossEntropyLoss) needs a float attribute 'weight', got None"


@pytest.mark.parametrize("make, message", [
    (lambda: CrossEntropy(weight=-1.0), "weight must be a finite number >= 0, got -1.0"),
    (lambda: MSE(weight=float("nan")), "weight must be a finite number >= 0, got nan"),
    (lambda: CrossEntropy(label_smoothing=1.0), "label_smoothing must be in [0, 1), got 1.0"),
    (lambda: BCE(pos_weight=0.0), "pos_weight must be > 0 or None, got 0.0"),
])
def test_losses_reject_bad_values(make, message):
    with pytest.raises(ValueError) as error:
        make()
    assert str(error.value) == message


@pytest.mark.parametrize("class_name, name", [
    ("CrossEntropy", "cross_entropy"), ("MSE", "mse"), ("HSICLoss", "hsic_loss"), ("CvMDependence", "cv_m_dependence"),
])
def test_snake_case(class_name, name):
    assert snake_case(class_name) == name


def test_class_names_match_registry():
    assert [c.name for c in (CrossEntropy, MSE, BCE, WeightedSum)] == ["cross_entropy", "mse", "bce", "weighted_sum"]
