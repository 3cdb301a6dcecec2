"""Samplers for test-time scaling of diffusion models: Best-of-N and LoTTS (localized TTS).

LoTTS: "Scale Where It Matters: Localized Test-Time Scaling for diffusion" (arXiv 2511.19917).
Instead of resampling whole images (Best-of-N), LoTTS (1) localizes defective regions of a sample
by contrasting attention under quality-aware prompts, (2) re-noises only those regions to an
intermediate time t* and (3) denoises them locally, RePaint-style: after every step the region
outside the mask is replaced by the original sample noised to the new time, and by the original
sample itself at the end, so it is left exactly unchanged (before any optional global
harmonization). A verifier picks the best candidate. A local candidate costs ceil(strength *
steps) denoiser evaluations instead of `steps`.

The denoiser contract (both `tiny_token_unet` and `diffusers_pipeline` implement it):

    model.sampling_scheduler(num_steps) -> a diffusers scheduler with timesteps set
    model.latent_shape() -> (C, H, W)
    model.encode(prompts, quality) -> cond   (quality: None, "high" or "low")
    model.cond_repeat(cond, n) -> cond with each prompt repeated n times
    model.denoise(x, t, cond, guidance_scale) -> model output for scheduler.step
    model.calls_per_step(guidance_scale) -> denoiser evaluations per image per step
    model.decode(latents) -> images (B, C, H, W) in [0, 1]
    model.quality_key_weights(cond) -> (B, K) weights of the quality words among the keys
    model.attention_target() -> the diffusers module whose attention processors are recorded

A verifier (`verifiers` table) is called as verifier(images, prompts) -> scores (B,).

NFE = denoiser evaluations per prompt (a batched call on k images with guidance counts 2k),
including LoTTS's two localization passes.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import torch
from annotated_types import Ge, Interval

from components.diffusion.attention import AttentionStore
from components.kinds import Kind
from components.types import NonNegativeInt, OpenFraction, PositiveInt

# Classifier-free guidance: 1 is the conditional model alone; larger pushes away from the unconditional.
GuidanceScale = Annotated[float, Ge(1)]

Verifier = Annotated[Any, Kind("verifiers")]
Localizer = Annotated[Any, Kind("localizers")]
Quality = Literal["high", "low", "none"]


def prompts_of(batch: dict[str, Any]) -> list[str]:
    """The batch's prompts: batch["prompt"] (strings), else the class labels batch["y"] as text."""
    if "prompt" in batch:
        prompts = batch["prompt"]
        return [prompts] if isinstance(prompts, str) else list(prompts)
    if "y" in batch:
        return [str(int(y)) for y in batch["y"]]
    raise KeyError(f"a sampling batch needs 'prompt' (or class labels 'y'); got keys {sorted(batch)}")


def _quality(value: str | None) -> str | None:
    return None if value in (None, "none") else value


def _device_dtype(model: Any) -> tuple[torch.device, torch.dtype]:
    param = next(model.parameters())
    return param.device, param.dtype


def add_noise(scheduler: Any, x0: torch.Tensor, noise: torch.Tensor, t: Any) -> torch.Tensor:
    """x0 noised to timestep t with this noise (DDPM/DDIM `add_noise`, flow-matching `scale_noise`)."""
    t = torch.as_tensor(t, device=x0.device)
    if hasattr(scheduler, "add_noise"):
        return scheduler.add_noise(x0, noise, t.reshape(1).long() if not t.is_floating_point() else t.reshape(1))
    return scheduler.scale_noise(x0, t.reshape(1), noise)


def denoise_loop(
    model: Any,
    scheduler: Any,
    x: torch.Tensor,
    cond: Any,
    start: int,
    guidance_scale: float,
    known: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
    max_calls: int | None = None,
) -> tuple[torch.Tensor, int]:
    """Run the scheduler's steps from index `start`; returns (x, steps run). With `mask`, the
    region outside it is reset after each step to `known` noised to the next timestep (with
    `noise`), and to `known` itself after the last step."""
    timesteps = scheduler.timesteps
    if hasattr(scheduler, "set_begin_index"):
        scheduler.set_begin_index(start)
    steps = 0
    for i in range(start, len(timesteps)):
        if max_calls is not None and steps >= max_calls:
            break
        t = timesteps[i]
        out = model.denoise(x, t, cond, guidance_scale)
        x = scheduler.step(out, t, x).prev_sample.to(x.dtype)
        steps += 1
        if mask is not None:
            assert known is not None and noise is not None
            target = known if i + 1 == len(timesteps) else add_noise(scheduler, known, noise, timesteps[i + 1])
            x = mask * x + (1 - mask) * target.to(x.dtype)
    return x, steps


def _best(scores: torch.Tensor, per_prompt: int) -> torch.Tensor:
    """Index (into the flat batch) of the best-scoring sample of each prompt."""
    grouped = scores.view(-1, per_prompt)
    return grouped.argmax(1) + torch.arange(len(grouped), device=scores.device) * per_prompt


class BestOfN:
    """Best-of-N: N full samples per prompt, the verifier keeps the best (the paper's baseline).

    Args:
        verifier: Called as verifier(images, prompts) -> scores.
        num_samples: N, full samples per prompt.
        num_steps: Sampling steps per sample.
        guidance_scale: Classifier-free guidance scale (1: none, one evaluation per step).
        quality: Quality variant of the prompt used for sampling ("none": the prompt as given).
        max_denoiser_calls: Stop each trajectory after this many calls (a smoke check of the
            sampling loop; null: run all steps).
    """

    def __init__(
        self,
        verifier: Verifier,
        num_samples: PositiveInt = 4,
        num_steps: PositiveInt = 20,
        guidance_scale: GuidanceScale = 1.0,
        quality: Quality = "none",
        max_denoiser_calls: PositiveInt | None = None,
    ) -> None:
        self.verifier, self.num_samples, self.num_steps = verifier, num_samples, num_steps
        self.guidance_scale, self.quality, self.max_denoiser_calls = guidance_scale, _quality(quality), max_denoiser_calls

    def sample(self, model: Any, prompts: list[str], n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """n full samples per prompt: (latents (P*n, C, H, W), their decoded images, scores (P*n,),
        steps per sample). Decoded once here: at paper scale a VAE decode is not free."""
        device, dtype = _device_dtype(model)
        cond = model.cond_repeat(model.encode(prompts, self.quality), n)
        x = torch.randn(len(prompts) * n, *model.latent_shape(), device=device, dtype=dtype)
        scheduler = model.sampling_scheduler(self.num_steps)
        x = x * getattr(scheduler, "init_noise_sigma", 1.0)
        x, steps = denoise_loop(model, scheduler, x, cond, 0, self.guidance_scale, max_calls=self.max_denoiser_calls)
        images = model.decode(x)
        scores = self.verifier(images, [p for p in prompts for _ in range(n)])
        return x, images, scores.to(device), steps

    @torch.no_grad()
    def __call__(self, model: Any, batch: dict[str, Any]) -> dict[str, Any]:
        prompts = prompts_of(batch)
        _, images, scores, steps = self.sample(model, prompts, self.num_samples)
        best = _best(scores, self.num_samples)
        nfe = self.num_samples * steps * model.calls_per_step(self.guidance_scale)
        return {
            "images": images[best],
            "scores": scores[best],
            "nfe": torch.full((len(prompts),), float(nfe)),
            "initial_images": images,
        }


class LoTTS:
    """Localized test-time scaling (arXiv 2511.19917): localize defects, resample only there.

    Per prompt: `num_initial` full samples, the verifier keeps the best; then `rounds` times:
    localize its defects (two denoiser calls at `localize_strength`: low- and high-quality
    prompt, attention recorded), draw `num_candidates` local resamples (masked re-noising to
    `strength` and RePaint-style local denoising with the `refine_quality` prompt), and keep the
    best of the current sample and the candidates.

    Args:
        verifier: Called as verifier(images, prompts) -> scores.
        localizer: The defect localizer (`localizers` table).
        num_initial: Full samples drawn first.
        num_candidates: Local resamples per round.
        rounds: Localize-and-resample rounds.
        num_steps: Steps of a full trajectory; a local one runs ceil(strength * num_steps).
        strength: Re-noising depth t*/T of the masked region, in (0, 1].
        localize_strength: Noise level t/T at which attention is recorded, in (0, 1).
        guidance_scale: Classifier-free guidance scale (1: none).
        quality: Prompt variant for the initial samples ("none": as given).
        refine_quality: Prompt variant for local denoising.
        harmonize_steps: After local denoising, this many global steps from `harmonize_strength`
            (blends the seam; changes pixels outside the mask slightly). 0: off.
        harmonize_strength: Noise level t/T of harmonization, in (0, 1).
        max_self_tokens: Record self-attention only at resolutions with at most this many positions.
    """

    def __init__(
        self,
        verifier: Verifier,
        localizer: Localizer,
        num_initial: PositiveInt = 2,
        num_candidates: PositiveInt = 4,
        rounds: NonNegativeInt = 1,
        num_steps: PositiveInt = 20,
        strength: Annotated[float, Interval(gt=0, le=1)] = 0.5,
        localize_strength: OpenFraction = 0.3,
        guidance_scale: GuidanceScale = 1.0,
        quality: Quality = "none",
        refine_quality: Quality = "high",
        harmonize_steps: NonNegativeInt = 0,
        harmonize_strength: OpenFraction = 0.1,
        max_self_tokens: PositiveInt = 1024,
    ) -> None:
        self.verifier, self.localizer = verifier, localizer
        self.num_initial, self.num_candidates, self.rounds = num_initial, num_candidates, rounds
        self.num_steps, self.strength, self.localize_strength = num_steps, strength, localize_strength
        self.guidance_scale, self.quality, self.refine_quality = guidance_scale, _quality(quality), _quality(refine_quality)
        self.harmonize_steps, self.harmonize_strength = harmonize_steps, harmonize_strength
        self.store = AttentionStore(max_self_tokens=max_self_tokens)
        self._attached: int | None = None
        self.initial = BestOfN(verifier, num_initial, num_steps, guidance_scale, quality)

    def _attach(self, model: Any) -> None:
        target = model.attention_target()
        if self._attached != id(target):
            self.store.attach(target)
            self._attached = id(target)

    def localize(self, model: Any, x0: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Masks (B, 1, H, W) and heat maps of x0's defects; the denoiser calls per image (2)."""
        self._attach(model)
        scheduler = model.sampling_scheduler(self.num_steps)
        index = min(len(scheduler.timesteps) - 1, round(len(scheduler.timesteps) * (1 - self.localize_strength)))
        t = scheduler.timesteps[index]
        xt = add_noise(scheduler, x0, torch.randn_like(x0), t)
        maps: dict[str, Any] = {}
        for quality in ("low", "high"):
            cond = model.encode(prompts, quality)
            with self.store.recording():
                model.denoise(xt, t, cond, 1.0)
            maps[quality] = (self.store.maps("cross"), self.store.maps("self"), model.quality_key_weights(cond))
        mask, heat = self.localizer(maps["low"][0], maps["high"][0], maps["low"][2], maps["high"][2],
                                    maps["high"][1], tuple(x0.shape[-2:]))
        return mask.to(x0.dtype), heat, 2

    def resample(self, model: Any, x0: torch.Tensor, mask: torch.Tensor, prompts: list[str], n: int) -> tuple[torch.Tensor, int]:
        """n local resamples of each x0 inside its mask; (candidates (B*n, ...), steps each)."""
        x0, mask = x0.repeat_interleave(n, 0), mask.repeat_interleave(n, 0)
        cond = model.cond_repeat(model.encode(prompts, self.refine_quality), n)
        scheduler = model.sampling_scheduler(self.num_steps)
        start = len(scheduler.timesteps) - math.ceil(self.strength * len(scheduler.timesteps))
        noise = torch.randn_like(x0)
        xt = add_noise(scheduler, x0, noise, scheduler.timesteps[start])
        x, steps = denoise_loop(model, scheduler, xt, cond, start, self.guidance_scale, known=x0, mask=mask, noise=noise)
        if self.harmonize_steps:
            h = model.sampling_scheduler(self.harmonize_steps)
            hstart = len(h.timesteps) - max(1, round(self.harmonize_strength * len(h.timesteps)))
            x, extra = denoise_loop(model, h, add_noise(h, x, torch.randn_like(x), h.timesteps[hstart]), cond, hstart,
                                    self.guidance_scale)
            steps += extra
        return x, steps

    @torch.no_grad()
    def __call__(self, model: Any, batch: dict[str, Any]) -> dict[str, Any]:
        prompts = prompts_of(batch)
        calls = model.calls_per_step(self.guidance_scale)
        x_all, images_all, scores_all, steps = self.initial.sample(model, prompts, self.num_initial)
        best = _best(scores_all, self.num_initial)
        x, images, scores = x_all[best], images_all[best], scores_all[best]
        initial = images.clone()
        nfe = self.num_initial * steps * calls
        masks = torch.zeros(len(x), 1, *x.shape[-2:], device=x.device)
        outside = torch.zeros(len(x), device=x.device)
        for _ in range(self.rounds):
            mask, _heat, loc_calls = self.localize(model, x, prompts)
            candidates, local_steps = self.resample(model, x, mask, prompts, self.num_candidates)
            nfe += loc_calls + self.num_candidates * local_steps * calls
            change = ((candidates - x.repeat_interleave(self.num_candidates, 0)).abs()
                      * (1 - mask.repeat_interleave(self.num_candidates, 0))).flatten(1).amax(1)
            outside = torch.maximum(outside, change.view(len(x), -1).amax(1).float())
            cand_images = model.decode(candidates)
            cand_scores = self.verifier(cand_images, [p for p in prompts for _ in range(self.num_candidates)])
            pool = torch.cat([x[:, None], candidates.view(len(x), self.num_candidates, *x.shape[1:])], 1)
            pool_images = torch.cat([images[:, None], cand_images.view(len(x), self.num_candidates, *images.shape[1:])], 1)
            pool_scores = torch.cat([scores[:, None], cand_scores.to(scores).view(len(x), -1)], 1)
            pick, rows = pool_scores.argmax(1), torch.arange(len(x))
            x, images, scores = pool[rows, pick], pool_images[rows, pick], pool_scores[rows, pick]
            masks = torch.maximum(masks, mask.float())
        return {
            "images": images,
            "scores": scores,
            "nfe": torch.full((len(prompts),), float(nfe)),
            "initial_images": initial,
            "initial_scores": scores_all[best],
            "masks": masks,
            "outside_change": outside,
        }


class LocalizationProbe:
    """Runs LoTTS's localization on images with known defects (batch "x" in model space, and
    "defect_mask"): returns the predicted masks, for the `mask_iou` metrics.

    Args:
        localizer: The defect localizer (`localizers` table).
        num_steps: Steps of the schedule the localization time is taken from.
        localize_strength: Noise level t/T at which attention is recorded, in (0, 1).
    """

    def __init__(self, localizer: Localizer, num_steps: PositiveInt = 20, localize_strength: OpenFraction = 0.3) -> None:
        verifier = lambda images, prompts: torch.zeros(len(images))  # noqa: E731 (unused by localize)
        self.lotts = LoTTS(verifier, localizer, num_steps=num_steps, localize_strength=localize_strength)

    @torch.no_grad()
    def __call__(self, model: Any, batch: dict[str, Any]) -> dict[str, Any]:
        device, dtype = _device_dtype(model)
        x0 = batch["x"].to(device, dtype)
        mask, heat, calls = self.lotts.localize(model, x0, prompts_of(batch))
        return {"images": model.decode(x0), "masks": mask, "heat": heat,
                "nfe": torch.full((len(x0),), float(calls))}
