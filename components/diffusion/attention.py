"""Recording cross- and self-attention of a diffusers UNet on every denoiser call.

`AttentionStore.attach(unet)` replaces every attention processor with a `RecordingProcessor`.
While the store is inactive the processor is diffusers' fused `AttnProcessor2_0` (no recording,
no extra memory). While it is active (`with store.recording():`), each attention layer whose
query length is in the recorded set computes its probabilities explicitly and adds them, averaged
over heads, to a running sum keyed by (kind, query length), kind "cross" (keys = prompt tokens)
or "self" (keys = image positions). Several calls inside one `recording()` block (the steps of a
trajectory) accumulate; `maps()` returns the means.

Self-attention maps are (B, Q, Q): at SDXL's 64x64 level that is 4096^2 per image, so
`max_self_tokens` bounds the self-attention resolutions recorded (cross maps are cheap).

LoTTS (arXiv 2511.19917) reads these maps to localize defects; the same hooks serve any method
that needs attention (prompt-to-prompt editing, attention-guided sampling).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from framework.extras import require


class AttentionStore:
    """Running means of attention maps, by (kind, query length).

    Args:
        max_self_tokens: Record self-attention only in layers with at most this many queries.
        max_cross_tokens: Record cross-attention only in layers with at most this many queries.
    """

    def __init__(self, max_self_tokens: int = 1024, max_cross_tokens: int = 4096) -> None:
        self.max_self_tokens, self.max_cross_tokens = max_self_tokens, max_cross_tokens
        self.active = False
        self.sums: dict[tuple[str, int], torch.Tensor] = {}
        self.counts: dict[tuple[str, int], int] = {}

    def attach(self, target: Any) -> None:
        """Put a recording processor on every attention layer of `target` (a diffusers model, or
        a wrapper whose `set_attn_processor` picks the processor for its architecture)."""
        target.set_attn_processor(RecordingProcessor(self))

    def reset(self) -> None:
        self.sums, self.counts = {}, {}

    @contextlib.contextmanager
    def recording(self) -> Iterator["AttentionStore"]:
        """Record inside this block (starting from empty maps)."""
        self.reset()
        self.active = True
        try:
            yield self
        finally:
            self.active = False

    def wants(self, kind: str, queries: int) -> bool:
        limit = self.max_cross_tokens if kind == "cross" else self.max_self_tokens
        return self.active and queries <= limit

    def add(self, kind: str, probs: torch.Tensor) -> None:
        """probs: (B, heads, Q, K) attention probabilities of one layer."""
        key = (kind, probs.shape[-2])
        mean = probs.float().mean(1).detach()
        if key in self.sums and self.sums[key].shape == mean.shape:
            self.sums[key] = self.sums[key] + mean
            self.counts[key] += 1
        else:
            self.sums[key], self.counts[key] = mean, 1

    def maps(self, kind: str) -> dict[int, torch.Tensor]:
        """Query length -> mean map (B, Q, K) of that kind over layers and calls."""
        return {q: self.sums[(k, q)] / self.counts[(k, q)] for (k, q) in self.sums if k == kind}


class RecordingProcessor:
    """A diffusers attention processor: fused attention normally, explicit and recorded while the
    store is active. Mirrors `diffusers.models.attention_processor.AttnProcessor`."""

    def __init__(self, store: AttentionStore) -> None:
        self.store = store
        self.fused = require("diffusers.models.attention_processor").AttnProcessor2_0()

    def __call__(
        self,
        attn: Any,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temb: torch.Tensor | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> torch.Tensor:
        kind = "self" if encoder_hidden_states is None else "cross"
        queries = hidden_states.shape[1] if hidden_states.ndim == 3 else hidden_states.shape[2] * hidden_states.shape[3]
        if not self.store.wants(kind, queries):
            return self.fused(attn, hidden_states, encoder_hidden_states, attention_mask, temb)
        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )
        attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        elif attn.norm_cross:
            encoder_hidden_states = attn.norm_encoder_hidden_states(encoder_hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        query, key, value = (attn.head_to_batch_dim(t) for t in (query, key, value))
        probs = attn.get_attention_scores(query, key, attention_mask)
        self.store.add(kind, probs.view(batch_size, attn.heads, *probs.shape[1:]))
        hidden_states = attn.batch_to_head_dim(torch.bmm(probs, value))
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


class FluxRecordingProcessor:
    """FLUX's joint (MMDiT) attention processor, recording while the store is active.

    FLUX attends over one joint sequence [text tokens; image tokens]. Its image-query rows give
    the two maps LoTTS needs: image -> text keys ("cross", (B, N_img, N_txt)) and image -> image
    keys ("self", (B, N_img, N_img)). `owner.text_tokens` is the text length of the current call
    (single-stream blocks get the joint sequence as one tensor). Mirrors
    `diffusers.models.transformers.transformer_flux.FluxAttnProcessor`.
    """

    def __init__(self, store: AttentionStore, owner: Any) -> None:
        module = require("diffusers.models.transformers.transformer_flux")
        self.store, self.owner, self.module = store, owner, module
        self.fused = module.FluxAttnProcessor()

    def __call__(self, attn: Any, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None,
                 attention_mask: torch.Tensor | None = None, image_rotary_emb: Any = None) -> Any:
        text = self.owner.text_tokens
        total = hidden_states.shape[1] + (encoder_hidden_states.shape[1] if encoder_hidden_states is not None else 0)
        if not self.store.active or (total - text) > max(self.store.max_cross_tokens, self.store.max_self_tokens):
            return self.fused(attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)
        m = self.module
        query, key, value, eq, ek, ev = m._get_qkv_projections(attn, hidden_states, encoder_hidden_states)
        query, key, value = (t.unflatten(-1, (-1, attn.head_dim)) for t in (query, key, value))
        query, key = attn.norm_q(query), attn.norm_k(key)
        if attn.added_kv_proj_dim is not None:
            eq, ek, ev = (t.unflatten(-1, (-1, attn.head_dim)) for t in (eq, ek, ev))
            query = torch.cat([attn.norm_added_q(eq), query], 1)
            key = torch.cat([attn.norm_added_k(ek), key], 1)
            value = torch.cat([ev, value], 1)
        if image_rotary_emb is not None:
            query = m.apply_rotary_emb(query, image_rotary_emb, sequence_dim=1)
            key = m.apply_rotary_emb(key, image_rotary_emb, sequence_dim=1)
        q, k, v = (t.transpose(1, 2) for t in (query, key, value))  # (B, heads, L, d)
        probs = (q[:, :, text:] @ k.transpose(-1, -2) * attn.head_dim ** -0.5).float().softmax(-1)
        n_img = probs.shape[2]
        if self.store.wants("cross", n_img):
            self.store.add("cross", probs[..., :text])
        if self.store.wants("self", n_img):
            self.store.add("self", probs[..., text:] / probs[..., text:].sum(-1, keepdim=True))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2, 3).to(query.dtype)
        if encoder_hidden_states is not None:
            enc, out = out.split_with_sizes([encoder_hidden_states.shape[1], out.shape[1] - encoder_hidden_states.shape[1]], 1)
            return attn.to_out[1](attn.to_out[0](out.contiguous())), attn.to_add_out(enc.contiguous())
        return out
