"""components/discrete_diffusion/hierarchical.py: the hierarchical CT-ELBO in closed form. One-hot
Gamma gives HDLM's terms, a collapsed Gamma gives MDLM's ELBO, and for an input-blind denoiser the
bound is the exact NLL for any soft Gamma; the forward marginals and the sampler."""

from __future__ import annotations

import pytest
import torch

from components.discrete_diffusion.cluster_map import ClusterMap
from components.discrete_diffusion.hierarchical import HierarchicalDiffusion
from components.generative.masked_diffusion import MaskedDiffusion

V, C = 6, 3
PARTITION = torch.tensor([0, 0, 1, 1, 2, 2])


def soft_log_gamma(seed: int = 0) -> torch.Tensor:
    return torch.log_softmax(2 * torch.randn(C, V, generator=torch.Generator().manual_seed(seed), dtype=torch.float64), 0)


def midpoints(n: int) -> torch.Tensor:
    return (torch.arange(n, dtype=torch.float64) + 0.5) / n


def test_one_hot_gamma_gives_hdlm_terms() -> None:
    # HDLM: a cluster position pays -log softmax restricted to x's cluster; a masked one -log p(cluster of x)
    g = torch.Generator().manual_seed(0)
    diffusion = HierarchicalDiffusion(V, C)
    logits = torch.randn(2, 4, V + C + 1, generator=g, dtype=torch.float64)
    x = torch.randint(0, V, (2, 4), generator=g)
    t = torch.tensor([0.3, 0.8], dtype=torch.float64)
    log_gamma = ClusterMap(C, V, "planted", clusters=PARTITION).log_gamma().double()
    log_p = torch.log_softmax(logits[..., :V], -1)
    same = PARTITION[x][..., None] == PARTITION  # (B, L, V): tokens of x's cluster
    log_p_cluster = torch.logsumexp(log_p.masked_fill(~same, -torch.inf), -1)
    hdlm_cluster = -(log_p.gather(-1, x[..., None])[..., 0] - log_p_cluster)
    hdlm_mask = -log_p_cluster
    w_c, w_m = diffusion.weights(t)
    clusters = V + PARTITION[x]
    cluster_term, mask_term = diffusion.terms(logits, x, clusters, t, log_gamma)
    assert torch.allclose(cluster_term, w_c * hdlm_cluster.sum(-1))
    assert mask_term.abs().max() == 0
    cluster_term, mask_term = diffusion.terms(logits, x, torch.full_like(x, V + C), t, log_gamma)
    assert torch.allclose(mask_term, w_m * hdlm_mask.sum(-1)) and cluster_term.abs().max() == 0


@pytest.mark.parametrize("columns", ["single_cluster", "equal_columns"])
def test_collapsed_gamma_gives_the_mdlm_elbo(columns: str) -> None:
    # a denoiser that sees only which positions are tokens; averaging over which hidden positions are
    # clusters (probability (beta - alpha) / (1 - alpha)) and which masks gives MDLM's ELBO at every t
    g = torch.Generator().manual_seed(1)
    num_clusters = 1 if columns == "single_cluster" else C
    log_gamma = torch.log_softmax(torch.randn(num_clusters, 1, generator=g, dtype=torch.float64), 0).expand(-1, V)
    hierarchical = HierarchicalDiffusion(V, num_clusters, schedule="cosine")
    masked = MaskedDiffusion(V, V, schedule="cosine")
    weights = torch.randn(V + 2, V, generator=g, dtype=torch.float64)

    def denoiser(tokens_or_hidden: torch.Tensor) -> torch.Tensor:  # hidden -> id V; a fixed bag-of-ids network
        counts = torch.nn.functional.one_hot(tokens_or_hidden, V + 2).double().cumsum(1)
        return counts @ weights

    x = torch.randint(0, V, (3, 5), generator=g)
    t = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)
    hidden = torch.rand(3, 5, generator=g) < 0.6
    logits = denoiser(torch.where(hidden, V, x))
    mdlm = masked.nelbo(logits, x, torch.where(hidden, V, x), t)
    alpha, beta = hierarchical.levels(t)
    as_cluster, _ = hierarchical.terms(logits, x, torch.where(hidden, V, x), t, log_gamma)
    _, as_mask = hierarchical.terms(logits, x, torch.where(hidden, V + num_clusters, x), t, log_gamma)
    assert as_mask.abs().max() < 1e-12  # KL(Gamma[:, x] || Gamma p) = 0: the cluster says nothing
    expected = ((beta - alpha) * as_cluster + (1 - beta) * as_mask) / (1 - alpha)
    assert torch.allclose(expected, mdlm)


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_the_elbo_of_an_input_blind_denoiser_is_the_exact_nll_for_soft_gamma(schedule: str) -> None:
    # E over z_t (token, cluster k ~ Gamma[:, x], mask) and t in closed form, one position per x
    diffusion = HierarchicalDiffusion(V, C, schedule)
    log_gamma = soft_log_gamma()
    logits = torch.randn(V + C + 1, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    t = midpoints(4000)
    alpha, beta = diffusion.levels(t)
    x = torch.arange(V).repeat(len(t), 1)  # (T, V): every token, one position each
    tt = t
    expected = (1 - beta)[:, None] * diffusion_term(diffusion, logits, x, torch.full_like(x, V + C), tt, log_gamma)
    for k in range(C):
        per_k = diffusion_term(diffusion, logits, x, torch.full_like(x, V + k), tt, log_gamma)
        expected = expected + (beta - alpha)[:, None] * log_gamma[k].exp() * per_k
    nll = -torch.log_softmax(logits[:V], 0)
    assert torch.allclose(expected.mean(0), nll, rtol=1e-4)


def diffusion_term(diffusion: HierarchicalDiffusion, logits: torch.Tensor, x: torch.Tensor, z: torch.Tensor,
                   t: torch.Tensor, log_gamma: torch.Tensor) -> torch.Tensor:
    """The NELBO of each position separately: (T, V), every position its own sequence."""
    flat = diffusion.nelbo(logits.expand(x.numel(), 1, -1), x.reshape(-1, 1), z.reshape(-1, 1),
                           t.repeat_interleave(x.shape[1]), log_gamma)
    return flat.reshape(x.shape)


def test_the_forward_marginals_are_alpha_cluster_share_and_mask() -> None:
    diffusion = HierarchicalDiffusion(V, C)
    log_gamma = soft_log_gamma(3)
    x = torch.full((1, 60000), 4)
    t = torch.tensor([0.4])
    z = diffusion.corrupt(x, t, log_gamma, torch.Generator().manual_seed(0))[0]
    alpha, beta = (float(v) for v in diffusion.levels(t))
    assert float((z == 4).double().mean()) == pytest.approx(alpha, abs=0.01)
    assert float((z == V + C).double().mean()) == pytest.approx(1 - beta, abs=0.01)
    shares = torch.stack([(z == V + k).double().mean() for k in range(C)])
    assert torch.allclose(shares, (beta - alpha) * log_gamma[:, 4].exp(), atol=0.01)


def test_the_sampler_draws_from_an_input_blind_denoiser_through_soft_clusters() -> None:
    probs = torch.tensor([0.3, 0.25, 0.2, 0.12, 0.08, 0.05])
    diffusion = HierarchicalDiffusion(V, C)
    denoiser = lambda z: probs.log().expand(*z.shape, V)  # noqa: E731
    samples = diffusion.sample(denoiser, soft_log_gamma(4).float(), 400, 40, steps=6,
                               generator=torch.Generator().manual_seed(0))
    assert samples.shape == (400, 40) and int(samples.max()) < V
    assert torch.allclose(torch.bincount(samples.reshape(-1), minlength=V) / samples.numel(), probs, atol=0.01)


def test_the_sampler_keeps_a_revealed_cluster_consistent() -> None:
    # one-hot Gamma: a token drawn at a cluster position belongs to that cluster, so a denoiser that
    # predicts uniformly can only produce tokens whose cluster was revealed first; run one step from
    # an all-cluster state
    diffusion = HierarchicalDiffusion(V, C)
    log_gamma = ClusterMap(C, V, "planted", clusters=PARTITION).log_gamma()
    z = torch.full((200, 30), V + 1)  # every position shows cluster 1 (tokens 2, 3)
    out = diffusion._step(lambda z: torch.zeros(*z.shape, V), log_gamma, z, torch.tensor(0.5), torch.tensor(0.0), None)
    assert set(out.unique().tolist()) == {2, 3}
