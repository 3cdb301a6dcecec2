"""TopK and BatchTopK SAEs: sparsity per row / per batch, the inference threshold, unit atoms."""

import pytest
import torch

from components.sae.models import BatchTopKSAE, TopKSAE


def test_topk_keeps_at_most_k_nonnegative_latents_per_row():
    torch.manual_seed(0)
    sae = TopKSAE(d_in=8, n_latents=32, k=3)
    z = sae.encode(torch.randn(50, 8))
    assert (z >= 0).all() and ((z > 0).sum(1) <= 3).all() and (z > 0).sum() > 100
    assert sae(torch.randn(5, 8)).shape == (5, 8)


def test_batchtopk_keeps_k_per_row_on_average_and_learns_a_threshold():
    torch.manual_seed(0)
    sae = BatchTopKSAE(d_in=8, n_latents=32, k=3, threshold_decay=0.0)
    x = torch.randn(64, 8)
    z = sae.train().encode(x)
    assert (z > 0).sum() == 3 * 64 and (z > 0).sum(1).max() > 3, "adaptive per row, k per row on average"
    assert sae.threshold == z[z > 0].min(), "decay 0: the threshold is the last batch's smallest kept value"
    pre = torch.relu(sae.pre_activations(x))
    assert torch.equal(sae.eval().encode(x), pre * (pre > sae.threshold)), "inference: one threshold"
    # on the same batch the (strict) threshold keeps all but the smallest kept value itself
    assert (sae.encode(x) > 0).sum() == 3 * 64 - 1


def test_batchtopk_before_training_falls_back_to_topk():
    sae = BatchTopKSAE(d_in=4, n_latents=8, k=2).eval()
    assert ((sae.encode(torch.randn(10, 4)) > 0).sum(1) <= 2).all()


def test_decoder_atoms_stay_unit_norm_and_bias_starts_at_the_mean():
    sae = TopKSAE(d_in=6, n_latents=12, k=2)
    with torch.no_grad():
        sae.W_dec.mul_(3.0)
    sae.normalize_decoder()
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(12))
    sae.init_decoder_bias(torch.arange(6.0))
    assert torch.equal(sae.b_dec.data, torch.arange(6.0))


@pytest.mark.parametrize("cls, kwargs, message", [
    (TopKSAE, {"d_in": 4, "n_latents": 8, "k": 9}, r"k must be in \[1, n_latents = 8\], got 9"),
])
def test_rejects(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


@pytest.mark.parametrize("name, arguments, problems", [
    ("topk_sae", {"d_in": 0, "k": 0}, {"d_in": "must be >= 1, got integer 0", "k": "must be >= 1, got integer 0"}),
    ("batchtopk_sae", {"threshold_decay": 1.0}, {"threshold_decay": "must be >= 0 and < 1, got number 1.0"}),
    ("batchtopk_sae", {"d_in": 1, "n_latents": 1, "k": 1, "threshold_decay": 0.0}, {}),
])
def test_argument_ranges(argument_problems, name, arguments, problems):
    assert argument_problems("models", name, **arguments) == problems


def test_width_mismatch_is_named():
    with pytest.raises(ValueError, match="the SAE's d_in is 4 but the activations have width 5"):
        TopKSAE(4, 8, 2)(torch.randn(2, 5))
