"""Hierarchical discrete diffusion (token -> cluster -> mask) through a column-stochastic map Gamma:
the forward process, its closed-form continuous-time ELBO and the ancestral sampler of LHDLM.

Paper: LHDLM, "Learnable Hierarchical Diffusion Language Model" (NeurIPS 2026; specs/lhdlm/README.md),
which extends HDLM (Zhou et al., arXiv 2510.08632) from a fixed hard partition to a learnable
Gamma (C clusters x V tokens, every column a distribution over clusters). The rule below is
derived here (the paper's text is not available); it is a CTMC, and its ELBO is tested in both
limits the paper names.

Forward (each position independently): the token x stays itself with probability alpha_t; it
jumps to a cluster k drawn from Gamma[:, x], and later to the mask. With the MDLM schedule alpha_t
(components/generative/masked_diffusion.py) and beta_t = 1 - (1 - alpha_t)^2 the probability of
not being masked:

    q(z_t = x) = alpha_t,   q(z_t = cluster k) = (beta_t - alpha_t) Gamma[k, x],   q(z_t = mask) = 1 - beta_t.

(The cluster -> mask rate -beta'_t / (beta_t - alpha_t) = -2 alpha'_t / alpha_t does not depend on
k or x: the chain is Markov and block-conditional.) With the denoiser's p(. | z_t) over tokens, the
model's posterior at a cluster-k position is pi(x) = p(x) Gamma[k, x] / sum_y p(y) Gamma[k, y]
(Bayes with the observation), and the negative CT-ELBO per sequence is

    int_0^1 E_{z_t} [ sum_{i: cluster} w_c(t) (-log pi(x^i))
                      + sum_{i: mask} w_m(t) KL(Gamma[:, x^i] || Gamma p(. | z_t)_i) ] dt,
    w_c = -alpha'_t / (beta_t - alpha_t),   w_m = -beta'_t / (1 - beta_t) = 2 x MDLM's weight.

Limits (tests/components/discrete_diffusion/test_hierarchical.py): one-hot Gamma is HDLM (pi is the
softmax restricted to x's cluster; the mask term is -log p(cluster of x)); a fully collapsed Gamma
(all columns equal) makes the mask term 0 and pi = p, and its expectation over which hidden
positions are clusters is MDLM's ELBO with the same alpha_t. For a denoiser that ignores its
input the ELBO is exactly -log p(x) in expectation, for any Gamma.

The sampler is ancestral with the exact finite-step posteriors of this chain (S = (alpha_t /
alpha_s)^2, the cluster state's survival from s to t): from t to s, a cluster-k position becomes a
token drawn from pi with probability 1 - (1 - alpha_s) alpha_t / (alpha_s (1 - alpha_t)); a masked
position draws x from p and becomes x, a cluster drawn from Gamma[:, x], or stays masked, with
q(z_s | z_t = mask, x).

Token ids in the denoiser's input: tokens 0..V-1, cluster k is V + k, the mask is V + C.
"""

from __future__ import annotations

from typing import Callable

import torch

from components.generative.masked_diffusion import NoiseSchedule, absorbed_token_nll, token_log_probs


def kl_to_mixture(log_gamma: torch.Tensor, log_probs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """KL(Gamma[:, x] || Gamma p) per position: log_gamma (C, V) (entries may be -inf), log_probs
    (B, L, V) of the denoiser, x (B, L); shape (B, L)."""
    log_mix = torch.logsumexp(log_probs[..., None, :] + log_gamma, dim=-1)  # (B, L, C): log (Gamma p)_k
    target_log = log_gamma.T[x].clamp_min(-1e30)  # (B, L, C): log Gamma[k, x], finite so that 0 log 0 = 0
    return (target_log.exp() * (target_log - log_mix)).sum(-1)


def cluster_posterior(log_gamma: torch.Tensor, log_probs: torch.Tensor, clusters: torch.Tensor) -> torch.Tensor:
    """log pi(. | cluster k) = log p + log Gamma[k, .] - log (Gamma p)_k at every position, k =
    clusters (B, L) (any value where the position is not a cluster); shape (B, L, V)."""
    joint = log_probs + log_gamma[clusters.clamp(0, log_gamma.shape[0] - 1)]
    return joint - torch.logsumexp(joint, dim=-1, keepdim=True)


class HierarchicalDiffusion:
    """The token -> cluster -> mask diffusion with map Gamma (module docstring); Gamma is passed
    to each call (as its log, (C, V), -inf allowed), so it may be learned.

    Args:
        vocab_size: V, the tokens.
        num_clusters: C, the clusters (ids V .. V + C - 1; the mask is V + C).
        schedule: The token schedule alpha_t (`linear` or `cosine`, `NoiseSchedule`).
    """

    def __init__(self, vocab_size: int, num_clusters: int, schedule: str = "linear") -> None:
        if vocab_size < 2 or num_clusters < 1:
            raise ValueError(f"need vocab_size >= 2 and num_clusters >= 1, got {vocab_size}, {num_clusters}")
        self.vocab_size, self.num_clusters = vocab_size, num_clusters
        self.mask_id, self.schedule = vocab_size + num_clusters, NoiseSchedule(schedule)

    def levels(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(alpha_t, beta_t): the probabilities of being the token, of not being masked."""
        alpha = self.schedule.alpha(t)
        return alpha, 1.0 - (1.0 - alpha) ** 2

    def weights(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(w_c, w_m): the CT-ELBO weights of a cluster position and of a masked position."""
        alpha, rate = self.schedule.alpha(t), self.schedule.rate(t)
        return -rate / (alpha * (1.0 - alpha)), -2.0 * rate / (1.0 - alpha)

    def corrupt(self, x: torch.Tensor, t: torch.Tensor, log_gamma: torch.Tensor,
                generator: torch.Generator | None = None) -> torch.Tensor:
        """z_t ~ q(. | x) for times t (B,)."""
        alpha, beta = self.levels(t)
        u = torch.rand(x.shape, generator=generator).to(x.device)
        columns = log_gamma.detach().T[x].exp().reshape(-1, self.num_clusters)
        k = torch.multinomial(columns.cpu(), 1, generator=generator).reshape(x.shape).to(x.device)
        z = torch.where(u < beta[:, None], self.vocab_size + k, torch.full_like(x, self.mask_id))
        return torch.where(u < alpha[:, None], x, z)

    def terms(self, logits: torch.Tensor, x: torch.Tensor, z: torch.Tensor, t: torch.Tensor,
              log_gamma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(cluster term, mask term) of the one-sample CT-ELBO estimate per sequence, nats (B,)."""
        log_probs = token_log_probs(logits, self.vocab_size)
        is_cluster = (z >= self.vocab_size) & (z < self.mask_id)
        w_c, w_m = self.weights(t)
        posterior = cluster_posterior(log_gamma, log_probs, z - self.vocab_size)
        cluster_term = absorbed_token_nll(posterior, x, is_cluster, w_c)
        kl = kl_to_mixture(log_gamma, log_probs, x)
        mask_term = w_m * torch.where(z == self.mask_id, kl, torch.zeros_like(kl)).sum(-1)
        return cluster_term, mask_term

    def nelbo(self, logits: torch.Tensor, x: torch.Tensor, z: torch.Tensor, t: torch.Tensor,
              log_gamma: torch.Tensor) -> torch.Tensor:
        """The one-sample CT-ELBO estimate per sequence, in nats (B,)."""
        cluster_term, mask_term = self.terms(logits, x, z, t, log_gamma)
        return cluster_term + mask_term

    @torch.no_grad()
    def sample(self, denoiser: Callable[[torch.Tensor], torch.Tensor], log_gamma: torch.Tensor, batch_size: int,
               length: int, steps: int, device: torch.device | str = "cpu",
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Ancestral sampling from all-mask (module docstring): token ids (batch_size, length)."""
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        z = torch.full((batch_size, length), self.mask_id, dtype=torch.long, device=device)
        times = torch.linspace(1.0, 0.0, steps + 1)
        for t, s in zip(times[:-1], times[1:]):
            z = self._step(denoiser, log_gamma, z, t, s, generator)
        return z

    def _step(self, denoiser: Callable[[torch.Tensor], torch.Tensor], log_gamma: torch.Tensor, z: torch.Tensor,
              t: torch.Tensor, s: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        (alpha_t, beta_t), (alpha_s, beta_s) = self.levels(t), self.levels(s)
        log_probs = token_log_probs(denoiser(z), self.vocab_size)
        is_cluster = (z >= self.vocab_size) & (z < self.mask_id)
        posterior = torch.where(is_cluster[..., None], cluster_posterior(log_gamma, log_probs, z - self.vocab_size),
                                log_probs)
        x = self._draw(posterior.exp(), generator).to(z.device)
        k = self.vocab_size + self._draw(log_gamma.T[x].exp(), generator).to(z.device)
        u = torch.rand(z.shape, generator=generator).to(z.device)
        stay_cluster = float((1 - alpha_s) * alpha_t / (alpha_s * (1 - alpha_t))) if alpha_s > 0 else 0.0
        from_cluster = torch.where(u < stay_cluster, z, x)
        p_mask = float(((1 - alpha_s) / (1 - alpha_t)) ** 2)  # (1 - beta_s) / (1 - beta_t)
        survive = (alpha_t / alpha_s) ** 2 if alpha_s > 0 else torch.tensor(0.0)
        p_cluster = float((beta_s - alpha_s) * (1 - survive) / (1 - beta_t))
        from_mask = torch.where(u < p_mask, z, torch.where(u < p_mask + p_cluster, k, x))
        return torch.where(is_cluster, from_cluster, torch.where(z == self.mask_id, from_mask, z))

    @staticmethod
    def _draw(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        flat = probs.reshape(-1, probs.shape[-1]).cpu()
        return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
