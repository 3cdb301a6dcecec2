"""The tiny stand-in for a text-to-image model: 8x8 digits conditioned on two prompt tokens.

A prompt is `[digit_class, quality]`: classes 0-9, quality HIGH (a clean digit), LOW (the digit
with one injected 3x3 defect) or NULL (unspecified; also the dropped token for classifier-free
guidance). The denoiser is diffusers' `UNet2DConditionModel` (tiny config) with the tokens
embedded as its cross-attention context, so the attention recording, schedulers and sampling
code are the ones the paper-scale SD2.1/SDXL pipelines use. This replaces the paper's text
prompts ("high quality" vs "low quality" appended to a caption) with one quality token whose
meaning the model learns from data where the defect location is known, which is what lets the
localization claim be checked exactly (specs/lotts/README.md).

LoTTS: "Scale Where It Matters: Localized Test-Time Scaling for diffusion" (arXiv 2511.19917).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from annotated_types import Ge, MinLen, MultipleOf
import torch
from torch import nn

from framework.extras import require
from components.types import PositiveInt, ProperFraction

NUM_CLASSES = 10
HIGH, LOW, NULL = 10, 11, 12
VOCAB = 13
QUALITY = {"high": HIGH, "low": LOW, None: NULL, "none": NULL}
DEFECT_SIZE = 3


def inject_defects(
    images: np.ndarray, rng: np.random.Generator, kinds: tuple[str, ...] = ("blob", "flip")
) -> tuple[np.ndarray, np.ndarray]:
    """One 3x3 defect per image (N, 1, 8, 8) in [0, 1], at a uniform location: `blob` sets the
    patch to 1 (a bright square), `flip` inverts it (1 - x). Returns (defective images, masks)."""
    out, masks = images.copy(), np.zeros_like(images)
    size = images.shape[-1]
    for i in range(len(images)):
        r, c = rng.integers(0, size - DEFECT_SIZE + 1, size=2)
        kind = kinds[rng.integers(0, len(kinds))]
        patch = out[i, :, r : r + DEFECT_SIZE, c : c + DEFECT_SIZE]
        out[i, :, r : r + DEFECT_SIZE, c : c + DEFECT_SIZE] = 1.0 if kind == "blob" else 1.0 - patch
        masks[i, :, r : r + DEFECT_SIZE, c : c + DEFECT_SIZE] = 1.0
    return out, masks


def parse_prompt(prompt: str) -> int:
    """A tiny prompt is a digit ("7", or "digit 7"); returns its class token."""
    text = prompt.strip().removeprefix("digit").strip()
    if not (len(text) == 1 and text.isdigit()):
        raise ValueError(f"a tiny prompt must be a digit 0-9 such as '7' or 'digit 7', got {prompt!r}")
    return int(text)


class TinyTokenUNet(nn.Module):
    """Token-conditioned `UNet2DConditionModel` on 8x8 single-channel images in [-1, 1].

    Called as model(x_t, t, tokens) -> predicted noise, tokens (B, 2) = [class, quality]. During
    training each token is replaced by NULL with its dropout probability, so the same network
    gives the unconditional prediction for classifier-free guidance and the quality-unspecified
    prompt used for sampling.

    Args:
        image_size: Height and width of the images.
        in_channels: Image channels.
        block_out_channels: UNet widths per resolution (one 2x downsampling between them).
        layers_per_block: ResNet layers per UNet block.
        context_dim: Token embedding width (the cross-attention dimension).
        attention_head_dim: Width of each attention head.
        class_dropout: Probability of replacing the class token by NULL in training.
        quality_dropout: Probability of replacing the quality token by NULL in training.
    """

    def __init__(
        self,
        image_size: PositiveInt = 8,
        in_channels: PositiveInt = 1,
        # GroupNorm's 8 groups need channel counts divisible by 8.
        block_out_channels: Annotated[list[Annotated[int, Ge(8), MultipleOf(8)]], MinLen(1)] = [32, 64],  # noqa: B006 (JSON-typed default, never mutated)
        layers_per_block: PositiveInt = 1,
        context_dim: PositiveInt = 32,
        attention_head_dim: PositiveInt = 8,
        class_dropout: ProperFraction = 0.1,
        quality_dropout: ProperFraction = 0.3,
    ) -> None:
        super().__init__()
        diffusers = require("diffusers")
        n = len(block_out_channels)
        self.unet = diffusers.UNet2DConditionModel(
            sample_size=image_size,
            in_channels=in_channels,
            out_channels=in_channels,
            down_block_types=("CrossAttnDownBlock2D",) * n,
            up_block_types=("CrossAttnUpBlock2D",) * n,
            block_out_channels=tuple(block_out_channels),
            layers_per_block=layers_per_block,
            cross_attention_dim=context_dim,
            attention_head_dim=attention_head_dim,
            norm_num_groups=8,
        )
        self.tokens = nn.Embedding(VOCAB, context_dim)
        self.slots = nn.Parameter(torch.zeros(2, context_dim))  # which slot a token sits in
        nn.init.normal_(self.tokens.weight, std=1.0)
        nn.init.normal_(self.slots, std=0.1)
        self.image_size, self.channels = image_size, in_channels
        self.class_dropout, self.quality_dropout = class_dropout, quality_dropout

    def context(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.training:
            drop = torch.rand(tokens.shape, device=tokens.device) < torch.tensor(
                [self.class_dropout, self.quality_dropout], device=tokens.device)
            tokens = torch.where(drop, torch.full_like(tokens, NULL), tokens)
        return self.tokens(tokens) + self.slots

    def forward(self, x: torch.Tensor, t: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return self.unet(x, t, encoder_hidden_states=self.context(tokens)).sample

    # --- the denoiser contract of the samplers (components/diffusion/sampling.py) ---

    def noise_scheduler(self) -> Any:
        """The training noise schedule (diffusers DDPMScheduler, epsilon prediction)."""
        return require("diffusers").DDPMScheduler(
            num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2", clip_sample=True)

    def sampling_scheduler(self, num_steps: int) -> Any:
        """A fresh DDIM scheduler on the training schedule, with `num_steps` timesteps set."""
        scheduler = require("diffusers").DDIMScheduler.from_config(self.noise_scheduler().config)
        scheduler.set_timesteps(num_steps, device=self.slots.device)
        return scheduler

    def latent_shape(self) -> tuple[int, int, int]:
        return (self.channels, self.image_size, self.image_size)

    def encode(self, prompts: list[str], quality: str | None = None) -> torch.Tensor:
        """Prompts ("7") -> tokens (B, 2) with the quality token ("high", "low" or None)."""
        device = self.slots.device
        classes = torch.tensor([parse_prompt(p) for p in prompts], dtype=torch.long, device=device)
        return quality_tokens(classes, quality)

    @staticmethod
    def cond_repeat(cond: torch.Tensor, n: int) -> torch.Tensor:
        return cond.repeat_interleave(n, dim=0)

    @staticmethod
    def calls_per_step(guidance_scale: float) -> int:
        """Denoiser evaluations per image per step: 2 with classifier-free guidance."""
        return 1 if guidance_scale == 1.0 else 2

    def denoise(self, x: torch.Tensor, t: Any, cond: torch.Tensor, guidance_scale: float = 1.0) -> torch.Tensor:
        t = torch.as_tensor(t, device=x.device).expand(len(x))
        if guidance_scale == 1.0:
            return self(x, t, cond)
        null = torch.full_like(cond, NULL)
        uncond, conditional = self(torch.cat([x, x]), torch.cat([t, t]), torch.cat([null, cond])).chunk(2)
        return uncond + guidance_scale * (conditional - uncond)

    @staticmethod
    def decode(latents: torch.Tensor) -> torch.Tensor:
        """Model space [-1, 1] -> images in [0, 1]."""
        return ((latents + 1) / 2).clamp(0, 1)

    @staticmethod
    def quality_key_weights(cond: torch.Tensor) -> torch.Tensor:
        """(B, K) weights of the cross-attention keys that carry the quality words: slot 1."""
        weights = torch.zeros(cond.shape, dtype=torch.float32, device=cond.device)
        weights[:, 1] = 1.0
        return weights

    def attention_target(self) -> Any:
        return self.unet


def quality_tokens(classes: torch.Tensor, quality: Literal["high", "low", "none"] | None) -> torch.Tensor:
    """(B,) class tokens -> (B, 2) prompt tokens with the given quality."""
    return torch.stack([classes, torch.full_like(classes, QUALITY[quality])], dim=1)
