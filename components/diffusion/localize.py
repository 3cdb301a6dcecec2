"""Defect localization by contrasting attention under quality-aware prompts (LoTTS, Sec. "defect
localization"; arXiv 2511.19917).

Given the attention recorded while denoising one noised image twice, once with the prompt's
low-quality variant and once with its high-quality variant (components/diffusion/attention.py):

1. cross-attention contrast, per recorded resolution: c = A_low[:, :, q_low] - A_high[:, :, q_high],
   the attention each image position pays to the quality words (weights over the keys from the
   model's `quality_key_weights`);
2. `contrast` picks the score of a position: "low_minus_high" is c itself (the paper's
   contrast); "deviation" is |c - median(c)|, how far it departs from the image's typical
   contrast in either direction (the sign of c at the defect differs between layers of our tiny
   UNet and between training runs, specs/lotts/README.md); "quality_attention" is
   A_low[q_low] + A_high[q_high], the attention the position pays to the quality words under both
   prompts (each softmax contrasts the quality words with the other keys); "random" ignores the
   attention and draws a uniform random heat map (torch's global generator): the negative
   control, a random mask of the same area and refinement;
   `resolutions` keeps only the listed query lengths (null: all recorded);
3. each resolution's map is scaled to max 1, upsampled to the latent grid and averaged;
4. self-attention propagation: heat <- (1 - w) heat + w S heat, with S the self-attention at the
   finest recorded resolution, repeated `propagation_steps` times (spreads evidence to positions
   that attend to each other: the same object part);
5. refinement into a coherent mask: the top `mask_fraction` of positions, dilated by `dilate`
   cells, keeping only the connected component with the most heat (`keep_largest`).

Returns binary masks (B, 1, H, W) on the latent grid and the heat maps.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from annotated_types import Interval
import torch
import torch.nn.functional as F
from components.types import NonNegativeInt, PositiveInt, Probability


class QualityContrastLocalizer:
    """Attention-contrast defect localizer; see the module docstring for the steps.

    Args:
        mask_fraction: Share of latent positions kept by the threshold, in (0, 1].
        contrast: How a position is scored from the two maps (module docstring, step 2).
        resolutions: Query lengths (H*W of an attention layer) to use; null: all recorded.
        propagation_weight: Mix weight w of self-attention propagation, in [0, 1] (0: off).
        propagation_steps: How many propagation steps.
        dilate: Dilation radius in latent cells after thresholding (0: none).
        keep_largest: Keep only the connected component carrying the most heat.
    """

    def __init__(
        self,
        mask_fraction: Annotated[float, Interval(gt=0, le=1)] = 0.15,
        contrast: Literal["low_minus_high", "deviation", "quality_attention", "random"] = "low_minus_high",
        resolutions: list[PositiveInt] | None = None,
        propagation_weight: Probability = 0.0,
        propagation_steps: NonNegativeInt = 1,
        dilate: NonNegativeInt = 0,
        keep_largest: bool = False,
    ) -> None:
        if contrast not in ("low_minus_high", "deviation", "quality_attention", "random"):
            raise ValueError(
                f"contrast must be 'low_minus_high', 'deviation', 'quality_attention' or 'random', got '{contrast}'")
        self.mask_fraction, self.contrast, self.resolutions = mask_fraction, contrast, resolutions
        self.propagation_weight, self.propagation_steps = propagation_weight, propagation_steps
        self.dilate, self.keep_largest = dilate, keep_largest

    def heat(
        self,
        cross_low: dict[int, torch.Tensor],
        cross_high: dict[int, torch.Tensor],
        weights_low: torch.Tensor,
        weights_high: torch.Tensor,
        self_maps: dict[int, torch.Tensor],
        grid: tuple[int, int],
    ) -> torch.Tensor:
        """Heat (B, 1, H, W) from cross maps {Q: (B, Q, K)} and key weights (B, K)."""
        height, width = grid
        if self.contrast == "random":
            return torch.rand(len(weights_low), 1, height, width, device=weights_low.device)
        total = None
        for queries, low in cross_low.items():
            if self.resolutions is not None and queries not in self.resolutions:
                continue
            high = cross_high[queries]
            a_low = (low * weights_low[:, None, :].to(low)).sum(-1)
            a_high = (high * weights_high[:, None, :].to(high)).sum(-1)
            contrast = a_low + a_high if self.contrast == "quality_attention" else a_low - a_high
            if self.contrast == "deviation":
                contrast = (contrast - contrast.median(1, keepdim=True).values).abs()
            contrast = contrast - contrast.amin(1, keepdim=True)
            contrast = contrast / contrast.amax(1, keepdim=True).clamp_min(1e-12)
            factor = round((height * width / queries) ** 0.5)
            h, w = height // factor, width // factor
            up = F.interpolate(contrast.view(-1, 1, h, w), size=(height, width), mode="bilinear", align_corners=False)
            total = up if total is None else total + up
        if total is None:
            raise ValueError("no cross-attention maps were recorded: attach the AttentionStore and record a denoiser call")
        heat = total / len(cross_low if self.resolutions is None else [q for q in cross_low if q in self.resolutions])
        if self.propagation_weight > 0 and self_maps:
            queries = max(self_maps)
            factor = round((height * width / queries) ** 0.5)
            h, w = height // factor, width // factor
            flat = F.interpolate(heat, size=(h, w), mode="area").flatten(1)
            for _ in range(self.propagation_steps):
                flat = (1 - self.propagation_weight) * flat + self.propagation_weight * torch.bmm(
                    self_maps[queries].to(flat), flat[..., None])[..., 0]
            heat = F.interpolate(flat.view(-1, 1, h, w), size=(height, width), mode="bilinear", align_corners=False)
        return heat

    def refine(self, heat: torch.Tensor) -> torch.Tensor:
        """Heat (B, 1, H, W) -> binary mask: threshold, dilate, keep the hottest component."""
        flat = heat.flatten(1)
        keep = max(1, round(self.mask_fraction * flat.shape[1]))
        threshold = flat.topk(keep, dim=1).values[:, -1:]
        mask = (flat >= threshold).float().view_as(heat)
        if self.dilate:
            mask = F.max_pool2d(mask, 2 * self.dilate + 1, stride=1, padding=self.dilate)
        if self.keep_largest:
            from scipy import ndimage

            out = np.zeros(mask.shape, dtype=np.float32)
            m, h = mask[:, 0].cpu().numpy(), heat[:, 0].float().cpu().numpy()
            for i in range(len(m)):
                labels, count = ndimage.label(m[i])
                if count > 1:
                    mass = ndimage.sum(h[i], labels, index=range(1, count + 1))
                    out[i, 0] = labels == (int(np.argmax(mass)) + 1)
                else:
                    out[i, 0] = m[i]
            mask = torch.as_tensor(out, device=heat.device)
        return mask

    def __call__(self, *args: object, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        heat = self.heat(*args, **kwargs)  # type: ignore[arg-type]
        return self.refine(heat), heat
