import pytest
import torch
import torch.nn.functional as F

from components.losses.basic import BCE, MSE, CrossEntropy, WeightedSum

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


@pytest.mark.parametrize("loss", [CrossEntropy, MSE, BCE], ids=lambda c: c.name)
def test_a_loss_has_no_weight(loss):
    """Weights belong to the terms of weighted_sum; a lone loss neither takes nor stores one."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'weight'"):
        loss(weight=5.0)
    assert not hasattr(loss(), "weight")


def test_mse_shape_mismatch():
    with pytest.raises(ValueError) as error:
        MSE()(torch.randn(6, 2), {"y": TARGET})
    assert str(error.value) == "mse: outputs of shape (6, 2) do not match targets of shape (6,)"


def test_weighted_sum_is_weights_dot_terms():
    loss = WeightedSum({"plain": (0.5, CrossEntropy()), "smooth": (2.0, CrossEntropy(label_smoothing=0.2))})
    outputs = torch.randn(6, 3, requires_grad=True)
    values = [F.cross_entropy(outputs, LABELS), F.cross_entropy(outputs, LABELS, label_smoothing=0.2)]
    total = loss(outputs, {"y": LABELS})
    assert torch.allclose(total, 0.5 * values[0] + 2.0 * values[1])
    assert list(loss.last_terms) == ["plain", "smooth"]
    assert loss.weights == {"plain": 0.5, "smooth": 2.0}
    assert torch.allclose(loss.last_terms["smooth"], values[1])
    assert not loss.last_terms["plain"].requires_grad
    total.backward()
    assert outputs.grad is not None


def test_weighted_sum_terms_are_named_not_ordered():
    """The same named terms in another order give the same sum and the same logged values."""
    terms = {"fit": (2.0, MSE()), "cls": (0.25, BCE()), "again": (1.0, MSE())}
    mse = F.mse_loss(PRED[:, 0], BINARY.float())
    bce = F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float())
    for order in (["fit", "cls", "again"], ["again", "cls", "fit"]):
        loss = WeightedSum({name: terms[name] for name in order})
        total = loss(PRED, {"y": BINARY.float()})
        assert torch.allclose(total, 2.0 * mse + 0.25 * bce + mse)
        assert list(loss.last_terms) == order
        assert torch.allclose(loss.last_terms["cls"], bce)


def test_weighted_sum_nests():
    inner = WeightedSum({"fit": (2.0, MSE())})
    outer = WeightedSum({"inner": (3.0, inner), "cls": (1.0, BCE())})
    total = outer(PRED, {"y": BINARY.float()})
    mse = F.mse_loss(PRED[:, 0], BINARY.float())
    bce = F.binary_cross_entropy_with_logits(PRED[:, 0], BINARY.float())
    assert torch.allclose(total, 3.0 * 2.0 * mse + bce)
    assert list(outer.last_terms) == ["inner", "inner.fit", "cls"]
    assert torch.allclose(outer.last_terms["inner"], 2.0 * mse)
    assert torch.allclose(outer.last_terms["inner.fit"], mse)


@pytest.mark.parametrize("terms, message", [
    ({}, "terms must map at least one name to (weight, loss), got {}"),
    ([(1.0, MSE())], "terms must map at least one name to (weight, loss), got [(1.0, MSE())]"),
    ({"Fit": (1.0, MSE())}, "term names must be lower_snake_case, got 'Fit'"),
    ({"1": (1.0, MSE())}, "term names must be lower_snake_case, got '1'"),
    ({"fit": MSE()}, "terms['fit'] must be a (weight, loss) pair, got MSE()"),
    ({"fit": (MSE(), 1.0)}, "terms['fit'] must be a (weight, loss) pair, got (MSE(), 1.0)"),
    ({"fit": (-1.0, MSE())}, "the weight of term 'fit' must be a finite number >= 0, got -1.0"),
    ({"fit": (float("nan"), MSE())}, "the weight of term 'fit' must be a finite number >= 0, got nan"),
    ({"fit": (True, MSE())}, "the weight of term 'fit' must be a finite number >= 0, got True"),
], ids=["empty", "a list", "capitals", "an index", "no weight", "swapped", "negative", "nan", "boolean"])
def test_weighted_sum_rejects_bad_terms(terms, message):
    with pytest.raises(ValueError) as error:
        WeightedSum(terms)
    assert str(error.value) == message


@pytest.mark.parametrize("name, arguments, problems", [
    ("cross_entropy", {"label_smoothing": 1.0}, {"label_smoothing": "must be >= 0 and < 1, got number 1.0"}),
    ("cross_entropy", {"label_smoothing": 0.0}, {}),
    ("bce", {"pos_weight": 0.0}, {"pos_weight": "must be > 0, got number 0.0"}),
    ("bce", {"pos_weight": 1e-9}, {}),
])
def test_losses_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("losses", name, **arguments) == problems


def test_class_names_match_registry():
    assert [c.name for c in (CrossEntropy, MSE, BCE, WeightedSum)] == ["cross_entropy", "mse", "bce", "weighted_sum"]
