"""Paper-scale text-to-image denoisers from diffusers: SD2.1, SDXL and FLUX, local weights only.

`diffusers_pipeline` loads a diffusers-format model from `local_dir` or from the local Hugging
Face cache, never from the network (`local_files_only=True`, HF_HUB_OFFLINE=1 is set while
loading). A model that is not there is a FileNotFoundError at build time naming the model id,
where it was looked for and the three ways to provide it. With `random_init: true` the
architecture is built from the configs shipped in components/diffusion/configs/ (they mirror
the public config.json files) with random weights: the full-size model, for timing and for
checking that a spec reaches its sampling loop on a machine without the weights. Random
text encoders get a stand-in tokenizer (words hashed into the vocabulary), since the tokenizer
files are part of the weights download.

The module implements the samplers' denoiser contract (components/diffusion/sampling.py).
Quality-aware prompts (LoTTS, arXiv 2511.19917) are the prompt with `high_quality_suffix` or
`low_quality_suffix` appended; their tokens are the keys whose cross-attention is contrasted.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from annotated_types import Ge, MultipleOf
from torch import nn

from components.local_assets import DTYPES, offline, resolve_local
from framework.extras import require

# Latent diffusion pipelines need image sides divisible by 16 (VAE downsampling x patching).
ImageSide = Annotated[int, Ge(16), MultipleOf(16)]

CONFIGS = Path(__file__).parent / "configs"
DEFAULT_IDS = {
    "sd21": "stabilityai/stable-diffusion-2-1",
    "sdxl": "stabilityai/stable-diffusion-xl-base-1.0",
    "flux": "black-forest-labs/FLUX.1-dev",
}


def family_config(family: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{family}.json").read_text())


def _strip(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if not k.startswith("_")}


class HashTokenizer:
    """Stand-in tokenizer for randomly initialized text encoders (no vocabulary files): each
    lower-cased word or punctuation mark (split as CLIP's tokenizer does) -> a fixed id in
    [3, vocab), between BOS and EOS, padded to `length`."""

    def __init__(self, vocab_size: int, length: int, bos: int | None = 0, eos: int = 2, pad: int = 1) -> None:
        self.vocab_size, self.model_max_length, self.bos, self.eos, self.pad = vocab_size, length, bos, eos, pad

    def word_ids(self, text: str) -> list[int]:
        words = re.findall(r"\w+|[^\w\s]", text.lower())
        return [3 + int(hashlib.sha1(w.encode()).hexdigest(), 16) % (self.vocab_size - 3) for w in words]

    def __call__(self, texts: list[str], **_: Any) -> Any:
        rows = []
        for text in texts:
            ids = ([self.bos] if self.bos is not None else []) + self.word_ids(text)
            ids = ids[: self.model_max_length - 1] + [self.eos]
            rows.append(ids + [self.pad] * (self.model_max_length - len(ids)))
        return type("Encoding", (), {"input_ids": torch.tensor(rows)})()


def build_random(family: str, dtype: torch.dtype, device: str, overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The family's modules from the shipped configs, random weights, created in `dtype` on `device`
    (on a GPU the initialization itself runs there). `overrides` patches configs (tests use it to
    build the same classes at toy size)."""
    diffusers, transformers = require("diffusers"), require("transformers")
    configs = family_config(family)
    for key, patch in (overrides or {}).items():
        configs[key] = {**configs[key], **patch}
    modules: dict[str, Any] = {}
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype if dtype.is_floating_point else torch.float32)
    try:
        with torch.device(device):
            for key in ("unet", "transformer", "vae"):
                if key in configs:
                    cls = getattr(diffusers, configs[key]["_class"])
                    modules[key] = cls.from_config(_strip(configs[key]))
            for key in ("text_encoder", "text_encoder_2"):
                if key in configs:
                    cfg = _strip(configs[key])
                    cls = getattr(transformers, configs[key]["_class"])
                    config_cls = transformers.T5Config if "T5" in configs[key]["_class"] else transformers.CLIPTextConfig
                    modules[key] = cls(config_cls(**cfg))
                    length = 512 if "T5" in configs[key]["_class"] else cfg.get("max_position_embeddings", 77)
                    bos = None if "T5" in configs[key]["_class"] else cfg.get("bos_token_id", 0)
                    eos = 1 if "T5" in configs[key]["_class"] else cfg.get("eos_token_id", 2)
                    pad = 0 if "T5" in configs[key]["_class"] else cfg.get("pad_token_id", 1)
                    modules[key.replace("text_encoder", "tokenizer")] = HashTokenizer(cfg["vocab_size"], length, bos, eos, pad)
    finally:
        torch.set_default_dtype(previous)
    sched_cfg = configs["scheduler"]
    modules["scheduler"] = getattr(diffusers, sched_cfg["_class"]).from_config(_strip(sched_cfg))
    return modules


class DiffusersPipeline(nn.Module):
    """SD2.1 / SDXL / FLUX from diffusers as a denoiser for the samplers (local weights only).

    Args:
        family: Architecture: "sd21", "sdxl" or "flux".
        model_id: Hugging Face id looked up in the Hugging Face cache (null: the family's public base model).
        local_dir: A diffusers-format folder to load instead of the cache.
        revision: Revision in the cache (null: the cached main).
        random_init: Build from the shipped configs with random weights (no weights needed).
        dtype: Weights and compute dtype.
        device: Where the modules are built ("cpu", "cuda"; null: cuda when available). Lightning
            moves the module to the spec's accelerator afterwards.
        height: Image height in pixels (null: the family's default, 768 / 1024 / 1024).
        width: Image width in pixels (null: as height).
        high_quality_suffix: Appended to a prompt for its high-quality variant.
        low_quality_suffix: Appended to a prompt for its low-quality variant.
        negative_prompt: Prompt of the unconditional branch of classifier-free guidance.
        flux_guidance: FLUX's distilled guidance value (one evaluation per step).
    """

    def __init__(
        self,
        family: Literal["sd21", "sdxl", "flux"],
        model_id: str | None = None,
        local_dir: str | None = None,
        revision: str | None = None,
        random_init: bool = False,
        dtype: Literal["float32", "float16", "bfloat16"] = "float16",
        device: str | None = None,
        height: ImageSide | None = None,
        width: ImageSide | None = None,
        high_quality_suffix: str = ", high quality, highly detailed, sharp focus",
        low_quality_suffix: str = ", low quality, blurry, distorted, deformed",
        negative_prompt: str = "",
        flux_guidance: float = 3.5,
    ) -> None:
        super().__init__()
        if family not in DEFAULT_IDS:
            raise ValueError(f"family must be one of {sorted(DEFAULT_IDS)}, got '{family}'")
        self.family, self.model_id = family, model_id or DEFAULT_IDS[family]
        self.dtype_ = DTYPES[dtype]
        size = family_config(family)["default_size"]
        self.height, self.width = height or size, width or height or size
        for name, value in (("height", self.height), ("width", self.width)):
            if value % 16 or value < 16:
                raise ValueError(f"{name} must be a positive multiple of 16, got {value}")
        self.suffix = {None: "", "high": high_quality_suffix, "low": low_quality_suffix}
        self.negative_prompt, self.flux_guidance = negative_prompt, flux_guidance
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if random_init:
            parts = build_random(family, self.dtype_, device)
        else:
            folder = resolve_local(self.model_id, family, local_dir, revision)
            diffusers = require("diffusers")
            with offline():
                pipe = diffusers.DiffusionPipeline.from_pretrained(folder, torch_dtype=self.dtype_, local_files_only=True)
            parts = {k: v for k, v in pipe.components.items() if v is not None}
            pipe.to(device)
        self._init_parts(parts)

    def _init_parts(self, parts: dict[str, Any]) -> None:
        self.denoiser = parts.get("unet", parts.get("transformer"))
        self.vae = parts["vae"]
        self.text_encoder = parts["text_encoder"]
        self.text_encoder_2 = parts.get("text_encoder_2")
        self.tokenizer, self.tokenizer_2 = parts["tokenizer"], parts.get("tokenizer_2")
        self.scheduler_config = dict(parts["scheduler"].config)
        self.scheduler_class = type(parts["scheduler"])
        self.requires_grad_(False)
        self.eval()
        if getattr(self.vae.config, "force_upcast", False):
            # As diffusers' SDXL pipeline: its VAE overflows in float16; float32 is also far faster
            # than emulated bfloat16 on CPUs without bf16 instructions.
            self.vae.to(torch.float32)
        self.vae_scale = 2 ** (len(self.vae.config.block_out_channels) - 1)
        self.text_tokens = 0  # FLUX: text length of the joint sequence, for attention recording

    # --- the denoiser contract ---

    def latent_shape(self) -> tuple[int, int, int]:
        return (self.vae.config.latent_channels, self.height // self.vae_scale, self.width // self.vae_scale)

    def sampling_scheduler(self, num_steps: int) -> Any:
        scheduler = self.scheduler_class.from_config(self.scheduler_config)
        device = next(self.denoiser.parameters()).device
        if self.family == "flux":
            import numpy as np

            seq = (self.height // 16) * (self.width // 16)
            c = self.scheduler_config
            m = (c["max_shift"] - c["base_shift"]) / (c["max_image_seq_len"] - c["base_image_seq_len"])
            mu = seq * m + c["base_shift"] - m * c["base_image_seq_len"]
            scheduler.set_timesteps(sigmas=np.linspace(1.0, 1 / num_steps, num_steps), mu=mu, device=device)
        else:
            scheduler.set_timesteps(num_steps, device=device)
        return scheduler

    def _tokenize(self, tokenizer: Any, texts: list[str], length: int | None = None) -> torch.Tensor:
        length = length or tokenizer.model_max_length
        ids = tokenizer(texts, padding="max_length", max_length=length, truncation=True, return_tensors="pt").input_ids
        return ids.to(next(self.text_encoder.parameters()).device)

    def _quality_weights(self, tokenizer: Any, prompts: list[str], quality: str | None, length: int) -> torch.Tensor:
        """(B, length) ones at the tokens of the quality suffix."""
        weights = torch.zeros(len(prompts), length)
        if quality is None:
            return weights
        base = self._tokenize(tokenizer, prompts, length)
        full = self._tokenize(tokenizer, [p + self.suffix[quality] for p in prompts], length)
        for i in range(len(prompts)):
            differs = (base[i] != full[i]).nonzero().flatten()
            eos = (full[i] == getattr(tokenizer, "eos_token_id", getattr(tokenizer, "eos", -1))).nonzero().flatten()
            stop = int(eos[0]) if len(eos) else length
            if len(differs):
                weights[i, int(differs[0]) : stop] = 1.0
        return weights

    @torch.no_grad()
    def encode(self, prompts: list[str], quality: str | None = None) -> dict[str, torch.Tensor]:
        texts = [p + self.suffix[quality] for p in prompts]
        negative = [self.negative_prompt] * len(prompts)
        if self.family == "sd21":
            emb = lambda t: self.text_encoder(self._tokenize(self.tokenizer, t))[0]  # noqa: E731
            weights = self._quality_weights(self.tokenizer, prompts, quality, self.tokenizer.model_max_length)
            return {"emb": emb(texts), "neg": emb(negative), "qw": weights}
        if self.family == "sdxl":
            def emb(t: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
                h1 = self.text_encoder(self._tokenize(self.tokenizer, t), output_hidden_states=True).hidden_states[-2]
                out2 = self.text_encoder_2(self._tokenize(self.tokenizer_2, t), output_hidden_states=True)
                return torch.cat([h1, out2.hidden_states[-2]], -1), out2.text_embeds
            (e, p), (ne, npool) = emb(texts), emb(negative)
            weights = self._quality_weights(self.tokenizer, prompts, quality, self.tokenizer.model_max_length)
            return {"emb": e, "pooled": p, "neg": ne, "neg_pooled": npool, "qw": weights}
        pooled = self.text_encoder(self._tokenize(self.tokenizer, texts)).pooler_output
        emb = self.text_encoder_2(self._tokenize(self.tokenizer_2, texts, 512))[0]
        weights = self._quality_weights(self.tokenizer_2, prompts, quality, 512)
        return {"emb": emb, "pooled": pooled, "qw": weights}

    @staticmethod
    def cond_repeat(cond: dict[str, torch.Tensor], n: int) -> dict[str, torch.Tensor]:
        return {k: v.repeat_interleave(n, 0) for k, v in cond.items()}

    def calls_per_step(self, guidance_scale: float) -> int:
        return 1 if self.family == "flux" or guidance_scale == 1.0 else 2

    def _unet(self, x: torch.Tensor, t: Any, emb: torch.Tensor, pooled: torch.Tensor | None) -> torch.Tensor:
        kwargs: dict[str, Any] = {}
        if self.family == "sdxl":
            ids = torch.tensor([self.height, self.width, 0, 0, self.height, self.width], device=x.device, dtype=x.dtype)
            kwargs["added_cond_kwargs"] = {"text_embeds": pooled.to(x.dtype), "time_ids": ids.expand(len(x), 6)}
        return self.denoiser(x, t, encoder_hidden_states=emb.to(x.dtype), **kwargs).sample

    def denoise(self, x: torch.Tensor, t: Any, cond: dict[str, torch.Tensor], guidance_scale: float = 1.0) -> torch.Tensor:
        if self.family == "flux":
            return self._flux(x, t, cond)
        if guidance_scale == 1.0:
            return self._unet(x, t, cond["emb"], cond.get("pooled"))
        pooled = torch.cat([cond["neg_pooled"], cond["pooled"]]) if "pooled" in cond else None
        out = self._unet(torch.cat([x, x]), t, torch.cat([cond["neg"], cond["emb"]]), pooled)
        uncond, conditional = out.chunk(2)
        return uncond + guidance_scale * (conditional - uncond)

    def _flux(self, x: torch.Tensor, t: Any, cond: dict[str, torch.Tensor]) -> torch.Tensor:
        b, c, h, w = x.shape
        packed = x.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // 2) * (w // 2), c * 4)
        img_ids = torch.zeros(h // 2, w // 2, 3, device=x.device, dtype=x.dtype)
        img_ids[..., 1] += torch.arange(h // 2, device=x.device)[:, None]
        img_ids[..., 2] += torch.arange(w // 2, device=x.device)[None, :]
        txt_ids = torch.zeros(cond["emb"].shape[1], 3, device=x.device, dtype=x.dtype)
        self.text_tokens = cond["emb"].shape[1]
        t = torch.as_tensor(t, device=x.device, dtype=x.dtype).expand(b) / 1000
        out = self.denoiser(
            hidden_states=packed, timestep=t, guidance=torch.full((b,), self.flux_guidance, device=x.device, dtype=x.dtype),
            pooled_projections=cond["pooled"].to(x.dtype), encoder_hidden_states=cond["emb"].to(x.dtype),
            txt_ids=txt_ids, img_ids=img_ids.reshape(-1, 3)).sample
        return out.view(b, h // 2, w // 2, c, 2, 2).permute(0, 3, 1, 4, 2, 5).reshape(b, c, h, w)

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        z = latents.to(self.vae.dtype) / config.scaling_factor + (getattr(config, "shift_factor", None) or 0.0)
        return ((self.vae.decode(z).sample.float() + 1) / 2).clamp(0, 1)

    @staticmethod
    def quality_key_weights(cond: dict[str, torch.Tensor]) -> torch.Tensor:
        return cond["qw"]

    def attention_target(self) -> Any:
        return self

    def set_attn_processor(self, processor: Any) -> None:
        """Attach a recording processor (AttentionStore.attach calls this)."""
        if self.family == "flux":
            from components.diffusion.attention import FluxRecordingProcessor

            self.denoiser.set_attn_processor(FluxRecordingProcessor(processor.store, self))
        else:
            self.denoiser.set_attn_processor(processor)
