"""A pretrained causal LM read from a local Hugging Face checkpoint folder (no hub access).

For paper-scale runs of `sae_replay` (Llama-3.1-8B, Qwen3): the frozen model whose residual
stream the SAEs read; of `tokenhd` (Qwen3-0.6B): the backbone a token-detection head reads through
`hidden_states(x)`, as it reads `causal_lm`'s. The weights are loaded by `transformers` from a local folder
(`config.json` + safetensors) named by `path` or an environment variable; with the folder or the
package missing, construction fails at once and says which. Nothing is downloaded
(`local_files_only=True`).

Sites: the wrapped model is `lm`, so the residual stream after decoder layer i is
`lm.model.layers.<i>` (Llama, Qwen2/3 layouts). The same internals as `causal_lm`:
`hidden_states(x)` (the residual stream after the embedding and after each decoder layer) and
`logits(h)` (the final norm and the unembedding on any of them: a logit lens), as latent_debate
reads them.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from components.local_assets import DTYPES, local_path
from framework.extras import missing



class PretrainedCausalLM(nn.Module):
    """Token ids (B, L) -> logits (B, L, V) of a local Hugging Face causal LM, kept frozen.

    Args:
        path: The checkpoint folder (with config.json); None reads the variable named by `env`.
        env: Environment variable holding the folder when `path` is None.
        dtype: Weight dtype.
    """

    def __init__(
        self,
        path: str | None = None,
        env: str = "EXPSPEC_LM_DIR",
        dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16",
    ) -> None:
        super().__init__()
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got '{dtype}'")
        folder = local_path("pretrained_causal_lm", "model.path", path, env, "local checkpoint (a folder with "
                            "config.json and safetensors weights)", needs=("config.json",), how="Put the weights there")
        try:
            import transformers
            from transformers import AutoModelForCausalLM
        except ImportError as error:
            raise ImportError(missing("transformers", f"pretrained_causal_lm (loading {folder})")) from error
        self.path = folder
        # transformers >= 4.56 names the argument `dtype` (`torch_dtype` before, deprecated in 5).
        major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
        key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        self.lm = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, **{key: DTYPES[dtype]})
        self.lm.requires_grad_(False)

    @property
    def d_model(self) -> int:
        """Width of the hidden states (the config's hidden_size)."""
        return int(self.lm.config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm(input_ids=x).logits

    def hidden_states(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The residual stream (B, L, d_model) after the embedding and after each decoder layer, as
        `causal_lm.hidden_states`. The last is the last layer's output before the final norm (transformers' own last hidden
        state has the norm applied), so that `logits(h)` treats every layer alike."""
        captured: list[torch.Tensor] = []

        def hook(module: nn.Module, inputs: object, output: object) -> None:
            captured.append(output[0] if isinstance(output, (tuple, list)) else output)

        handle = self.lm.model.layers[-1].register_forward_hook(hook)
        try:
            out = self.lm.model(input_ids=x, attention_mask=attention_mask, output_hidden_states=True)
        finally:
            handle.remove()
        return [*out.hidden_states[:-1], captured[0]]

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Next-token logits read from a residual stream h (..., d): the final norm, then the
        unembedding (a logit lens on an intermediate layer)."""
        return self.lm.get_output_embeddings()(self.lm.model.norm(h))
