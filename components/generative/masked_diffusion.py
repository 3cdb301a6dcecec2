"""Masked (absorbing-state) discrete diffusion for language: the continuous-time ELBO and the
ancestral sampler of MDLM.

Papers: Sahoo et al., "Simple and Effective Masked Diffusion Language Models" (MDLM, NeurIPS 2024);
Shi et al., "Simplified and Generalized Masked Diffusion for Discrete Data" (MD4, NeurIPS 2024).

Forward process: every token of x independently stays itself with probability alpha_t and is
replaced by the mask id otherwise; alpha is a decreasing `NoiseSchedule` with alpha_0 = 1 and
alpha_1 = 0. With a denoiser p(. | z_t) over the V tokens (x-prediction), the continuous-time
negative ELBO of a sequence is

    NELBO(x) = int_0^1 w(t) E_{z_t ~ q(. | x)} [ sum_{i: z_t^i = mask} -log p(x^i | z_t) ] dt,
    w(t) = -alpha'_t / (1 - alpha_t),

estimated with one t per sequence (`diffusion_times`, stratified over the batch). It is an upper
bound on -log p(x) (nats); for a denoiser that ignores its input it equals -sum_i log p(x^i)
exactly in expectation (tests/components/generative/test_masked_diffusion.py).

The ancestral sampler goes from all-mask at t = 1 to t = 0 in `steps` equal steps: from t to
s < t, each masked position is revealed with probability (alpha_s - alpha_t) / (1 - alpha_t), as a
token drawn from the denoiser's p(. | z_t); revealed tokens stay.

Reused by the hierarchical (token -> cluster -> mask) objective of lhdlm
(components/discrete_diffusion/hierarchical.py): its schedules, times and `absorbed_token_nll`.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

SCHEDULES = ("linear", "cosine")


class NoiseSchedule:
    """alpha_t, the probability that a token is still itself at time t in [0, 1], and its
    derivative: `linear` alpha = 1 - t (MDLM's log-linear schedule), `cosine` alpha = cos(pi t / 2)."""

    def __init__(self, name: str = "linear") -> None:
        if name not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {name!r}")
        self.name = name

    def alpha(self, t: torch.Tensor) -> torch.Tensor:
        return 1.0 - t if self.name == "linear" else torch.cos(0.5 * math.pi * t)

    def rate(self, t: torch.Tensor) -> torch.Tensor:
        """d alpha / dt (<= 0)."""
        return -torch.ones_like(t) if self.name == "linear" else -0.5 * math.pi * torch.sin(0.5 * math.pi * t)


def diffusion_times(batch_size: int, device: torch.device | str = "cpu", generator: torch.Generator | None = None,
                    t_min: float = 1e-3) -> torch.Tensor:
    """One time per sequence, stratified (MDLM's low-discrepancy sampler): t_b = (u + b) / B for one
    uniform u, mapped into [t_min, 1] (t_min keeps w(t) finite). Shape (B,)."""
    u = torch.rand((), generator=generator).to(device)
    t = (u + torch.arange(batch_size, device=device)) / batch_size
    return t_min + (1.0 - t_min) * t


def mdlm_weight(schedule: NoiseSchedule, t: torch.Tensor) -> torch.Tensor:
    """w(t) = -alpha'_t / (1 - alpha_t), the CT-ELBO weight of a masked position."""
    return -schedule.rate(t) / (1.0 - schedule.alpha(t))


def token_log_probs(logits: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """log p(. | z_t) over the V tokens from the denoiser's logits (B, L, >= V): its first V
    entries, in at least float32."""
    tokens = logits[..., :vocab_size]
    return torch.log_softmax(tokens.to(torch.promote_types(tokens.dtype, torch.float32)), dim=-1)


def absorbed_token_nll(log_probs: torch.Tensor, x: torch.Tensor, absorbed: torch.Tensor,
                       weight: torch.Tensor) -> torch.Tensor:
    """sum_i weight_b * [absorbed_bi] * -log_probs[b, i, x_bi] per sequence: the CT-ELBO term of
    positions whose token is hidden (log_probs (B, L, V), x (B, L), absorbed (B, L) bool, weight
    (B,)); shape (B,)."""
    nll = -log_probs.gather(-1, x[..., None])[..., 0]
    return weight * torch.where(absorbed, nll, torch.zeros_like(nll)).sum(-1)


class MaskedDiffusion:
    """MDLM over a vocabulary of `vocab_size` tokens with mask id `mask_id` (module docstring).

    Args:
        vocab_size: V, the tokens the denoiser predicts (its logits' first V entries are read).
        mask_id: The id of the mask in the denoiser's input (usually V).
        schedule: `linear` or `cosine` (`NoiseSchedule`).
    """

    def __init__(self, vocab_size: int, mask_id: int, schedule: str = "linear") -> None:
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        if 0 <= mask_id < vocab_size:
            raise ValueError(f"mask_id must not be a token id (< {vocab_size}), got {mask_id}")
        self.vocab_size, self.mask_id, self.schedule = vocab_size, mask_id, NoiseSchedule(schedule)

    def corrupt(self, x: torch.Tensor, t: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """z_t ~ q(. | x): each token masked independently with probability 1 - alpha_t (t: (B,))."""
        keep = torch.rand(x.shape, generator=generator).to(x.device) < self.schedule.alpha(t)[:, None]
        return torch.where(keep, x, torch.full_like(x, self.mask_id))

    def nelbo(self, logits: torch.Tensor, x: torch.Tensor, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The one-sample CT-ELBO estimate per sequence, in nats (B,), from the denoiser's logits
        (B, L, >= V) on z_t."""
        log_probs = token_log_probs(logits, self.vocab_size)
        return absorbed_token_nll(log_probs, x, z == self.mask_id, mdlm_weight(self.schedule, t))

    @torch.no_grad()
    def sample(self, denoiser: Callable[[torch.Tensor], torch.Tensor], batch_size: int, length: int, steps: int,
               device: torch.device | str = "cpu", generator: torch.Generator | None = None) -> torch.Tensor:
        """Ancestral sampling (module docstring): token ids (batch_size, length)."""
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        z = torch.full((batch_size, length), self.mask_id, dtype=torch.long, device=device)
        times = torch.linspace(1.0, 0.0, steps + 1)
        for t, s in zip(times[:-1], times[1:]):
            alpha_t, alpha_s = self.schedule.alpha(t), self.schedule.alpha(s)
            reveal_p = float((alpha_s - alpha_t) / (1.0 - alpha_t))
            probs = torch.softmax(denoiser(z)[..., : self.vocab_size].float(), dim=-1)
            drawn = torch.multinomial(probs.reshape(-1, self.vocab_size).cpu(), 1, generator=generator)
            drawn = drawn.reshape(batch_size, length).to(device)
            reveal = (torch.rand(z.shape, generator=generator).to(device) < reveal_p) & (z == self.mask_id)
            z = torch.where(reveal, drawn, z)
        return z
