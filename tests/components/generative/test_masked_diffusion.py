"""components/generative/masked_diffusion.py: MDLM's CT-ELBO is exact for an input-blind denoiser,
the forward process masks at rate 1 - alpha_t, the sampler draws from the denoiser."""

from __future__ import annotations

import math

import pytest
import torch

from components.generative.masked_diffusion import MaskedDiffusion, NoiseSchedule, diffusion_times, mdlm_weight


def midpoints(n: int) -> torch.Tensor:
    return (torch.arange(n, dtype=torch.float64) + 0.5) / n


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_the_ct_elbo_of_an_input_blind_denoiser_is_its_exact_nll(schedule: str) -> None:
    # E[NELBO | t] = w(t) (1 - alpha_t) sum_i -log p(x_i) = -alpha'_t sum_i -log p(x_i): integrates to the NLL
    g = torch.Generator().manual_seed(0)
    diffusion = MaskedDiffusion(vocab_size=7, mask_id=7, schedule=schedule)
    logits = torch.randn(1, 5, 8, generator=g, dtype=torch.float64)
    x = torch.randint(0, 7, (1, 5), generator=g)
    nll = -torch.log_softmax(logits[..., :7], -1).gather(-1, x[..., None]).sum()
    t = midpoints(4000)
    all_masked = torch.full((len(t), 5), 7)
    per_t = diffusion.nelbo(logits.expand(len(t), -1, -1), x.expand(len(t), -1), all_masked, t)
    expected = per_t * (1 - diffusion.schedule.alpha(t))
    assert float(expected.mean()) == pytest.approx(float(nll), rel=1e-5)


def test_the_weight_is_one_over_t_for_the_linear_schedule() -> None:
    t = torch.tensor([0.1, 0.5, 0.9])
    assert torch.allclose(mdlm_weight(NoiseSchedule("linear"), t), 1 / t)


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_corruption_masks_each_token_with_probability_one_minus_alpha(schedule: str) -> None:
    diffusion = MaskedDiffusion(vocab_size=5, mask_id=5, schedule=schedule)
    x = torch.randint(0, 5, (4, 20000), generator=torch.Generator().manual_seed(1))
    t = torch.tensor([0.1, 0.4, 0.7, 0.95])
    z = diffusion.corrupt(x, t, torch.Generator().manual_seed(2))
    masked = (z == 5).double().mean(1)
    assert torch.allclose(masked, 1 - diffusion.schedule.alpha(t).double(), atol=0.01)
    assert torch.equal(z[z != 5], x[z != 5])


def test_times_are_stratified_over_the_batch() -> None:
    t = diffusion_times(8, generator=torch.Generator().manual_seed(0), t_min=0.0)
    assert torch.all((t >= torch.arange(8) / 8) & (t < (torch.arange(8) + 1) / 8))
    assert float(diffusion_times(100, t_min=0.01).min()) >= 0.01


def test_the_sampler_draws_from_an_input_blind_denoiser() -> None:
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    diffusion = MaskedDiffusion(vocab_size=4, mask_id=4)
    denoiser = lambda z: probs.log().expand(*z.shape, 4)  # noqa: E731
    samples = diffusion.sample(denoiser, 500, 40, steps=7, generator=torch.Generator().manual_seed(0))
    assert samples.shape == (500, 40) and int(samples.max()) < 4  # every mask is revealed
    assert torch.allclose(torch.bincount(samples.reshape(-1), minlength=4) / samples.numel(), probs, atol=0.01)


def test_the_sampler_reveals_in_schedule_order() -> None:
    # with steps = 2 on the linear schedule, half the positions are revealed at the first step
    diffusion = MaskedDiffusion(vocab_size=3, mask_id=3)
    seen = []

    def denoiser(z: torch.Tensor) -> torch.Tensor:
        seen.append(float((z == 3).double().mean()))
        return torch.zeros(*z.shape, 3)

    diffusion.sample(denoiser, 100, 100, steps=2, generator=torch.Generator().manual_seed(0))
    assert seen[0] == 1.0 and seen[1] == pytest.approx(0.5, abs=0.02)


def test_a_mask_id_inside_the_vocabulary_is_refused() -> None:
    with pytest.raises(ValueError, match="mask_id must not be a token id \\(< 5\\), got 2"):
        MaskedDiffusion(vocab_size=5, mask_id=2)
    with pytest.raises(ValueError, match="schedule must be one of linear, cosine, got 'loglinear'"):
        NoiseSchedule("loglinear")
    assert math.isclose(float(NoiseSchedule("cosine").alpha(torch.tensor(1.0))), 0.0, abs_tol=1e-7)
