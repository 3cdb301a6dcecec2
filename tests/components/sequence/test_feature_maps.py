"""components/sequence/feature_maps.py: elu1, polysketch_random, llops_learned."""

from __future__ import annotations

import pytest
import torch

from components.sequence.feature_maps import Elu1, LLoPSLearned, PolySketchRandom


def test_elu1_is_elu_plus_one_and_positive() -> None:
    x = torch.tensor([[-2.0, 0.0, 3.0]])
    expected = torch.tensor([[torch.exp(torch.tensor(-2.0)).item(), 1.0, 4.0]])
    assert torch.allclose(Elu1(3)(x), expected)
    assert Elu1(3).num_features == 3


def test_rank_one_degree_two_sketch_is_the_hand_computed_square() -> None:
    """r = 1, p = 2: S(x) = g . x, phi(x) = (g . x)^2, so phi(q) phi(k) = (g . q)^2 (g . k)^2."""
    sketch = PolySketchRandom(head_dim=2, degree=2, rank=1, seed=0)
    sketch.projections.copy_(torch.tensor([[[1.0, 2.0]]]))
    q, k = torch.tensor([3.0, -1.0]), torch.tensor([0.5, 1.0])
    assert sketch(q).item() == pytest.approx(1.0)           # (3 - 2)^2
    assert sketch(k).item() == pytest.approx(6.25)          # (0.5 + 2)^2
    assert (sketch(q) @ sketch(k)).item() == pytest.approx(6.25)


def test_degree_four_features_are_the_self_tensored_product_sketch() -> None:
    torch.manual_seed(0)
    sketch = PolySketchRandom(head_dim=5, degree=4, rank=3, seed=1)
    x = torch.randn(5)
    g1, g2 = sketch.projections
    s = (g1 @ x) * (g2 @ x) / 3 ** 0.5
    assert torch.allclose(sketch(x), torch.outer(s, s).flatten(), atol=1e-6)
    assert sketch.num_features == 9 and sketch(torch.randn(2, 7, 5)).shape == (2, 7, 9)


def test_random_sketch_is_unbiased_for_the_polynomial_kernel() -> None:
    """E[S(q) . S(k)] = (q . k)^(p/2) over Gaussian projections. S(q) . S(k) = (1/r) sum_i t_i with
    t_i = prod_j (g_ij . q)(g_ij . k) independent terms, so with r = 20000 it is within 3 standard
    errors of (q . k)^2 (= 0.2304 here)."""
    q, k = torch.tensor([0.6, 0.8, 0.0]), torch.tensor([0.8, 0.0, 0.6])
    sketch = PolySketchRandom(3, degree=4, rank=20000, seed=0)
    terms = sketch.sketch(q) * sketch.sketch(k) * 20000
    assert (sketch.sketch(q) @ sketch.sketch(k)).item() == pytest.approx(terms.mean().item(), rel=1e-4)
    assert (terms.mean() - (q @ k) ** 2).abs() < 3 * terms.std() / 20000 ** 0.5


def test_learned_sketch_starts_at_the_random_one_and_stays_non_negative() -> None:
    random, learned = PolySketchRandom(8, seed=3), LLoPSLearned(8, seed=3)
    x = torch.randn(10, 8)
    assert torch.equal(random(x), learned(x))
    assert [n for n, _ in learned.named_parameters()] == ["projections"]
    assert list(random.parameters()) == []
    with torch.no_grad():
        learned.projections.normal_(0, 5)
    assert (learned(x) @ learned(torch.randn(12, 8)).T).min() >= 0


@pytest.mark.parametrize("cls", [PolySketchRandom, LLoPSLearned])
def test_odd_degree_is_rejected(cls: type) -> None:
    with pytest.raises(ValueError, match="degree must be even .* got 3"):
        cls(8, degree=3)
