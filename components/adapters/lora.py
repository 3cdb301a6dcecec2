"""LoRA-family adapters on any model, through `peft` (the optional extra `.[peft]`).

`peft_lora` wraps a model node: every chosen `nn.Linear` of the base gets a low-rank adapter
(y = W x + s B A x, s = alpha / rank, or alpha / sqrt(rank) for rsLoRA); the base is frozen and
only the adapters train. The variants of "Learning Rate Matters: Vanilla LoRA May Suffice for LLM
Fine-tuning" (specs/lora_reeval/README.md) are arguments: `rslora`, `dora` (weight-decomposed:
a trainable magnitude per output), `init` (how A and B start: LoRA's B = 0, PiSSA's principal
singular components, MiLoRA's minor ones, OLoRA's QR factors).

Names: the adapted model keeps the base model's tensor names for the base weights (`net.0.weight`,
not peft's `net.0.base_layer.weight`), and adds the adapter's (`net.0.lora_A.default.weight`), so
a checkpoint of the base (an earlier stage, another spec) loads into it by name
(`init: {..., strict: false}`: the adapter's tensors are new).

Starting from loaded weights: when a load brings an adapted layer's base weights without its
adapter tensors (a base model's checkpoint), the adapter is initialized again from the loaded
weights, exactly as at construction. Inits that read the base (PiSSA, MiLoRA, OLoRA: an SVD or QR
of W; DoRA: the norm of W's rows) therefore start from the pretrained weights, not from the random
ones the base was built with. A load that brings the adapter's tensors too (a resume) restores
them as they are.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import torch
from torch import nn

from components.kinds import Model
from components.types import PositiveFloat, PositiveInt, ProperFraction
from framework.extras import missing

# Imported with this module, not at the first build: `exp sweep` forks each trial from a server
# that imported the spec's component modules once, so peft (and the transformers it imports,
# seconds of CPU) is paid once per sweep, not per trial. Without it, building says what to install.
try:
    import peft
except ImportError:  # the optional extra `.[peft]` is not installed
    peft = None

ADAPTER = "default"  # peft's adapter name; one adapter per layer here
# `init` -> peft's `init_lora_weights`; MiLoRA is not in peft: it starts from LoRA's and is set here.
PEFT_INIT: dict[str, Any] = {"lora": True, "gaussian": "gaussian", "pissa": "pissa", "olora": "olora", "milora": True}
Init = Literal["lora", "gaussian", "pissa", "olora", "milora"]
_REINIT = "_expspec_reinit_adapter"  # set on a layer by the load pre-hook, read by the post-hook


def import_peft() -> Any:
    """The `peft` package, or an ImportError that names the extra which installs it."""
    if peft is None:
        raise ImportError(missing("peft", "peft_lora"))
    return peft


def peft_lora(
    base: Model,
    rank: PositiveInt = 8,
    alpha: PositiveFloat = 8.0,
    init: Init = "lora",
    rslora: bool = False,
    dora: bool = False,
    targets: list[str] | None = None,
    dropout: ProperFraction = 0.0,
) -> nn.Module:
    """The base model with a low-rank adapter on each target Linear layer; only adapters train.

    Args:
        base: The model to adapt (any model node); adapted in place and returned.
        rank: r, the adapters' rank.
        alpha: Scale numerator: the update is (alpha / rank) B A, or (alpha / sqrt(rank)) B A
            with `rslora`.
        init: How A and B start. `lora`: A Kaiming-uniform, B = 0 (Hu et al.); `gaussian`: A
            normal with std 1/rank, B = 0; `pissa`: the r principal singular components of W,
            which the base loses (W - s B A stays frozen); `milora`: the r minor ones, likewise;
            `olora`: the first r columns of W's QR factors, likewise. Every init leaves the
            model's function unchanged.
        rslora: Rank-stabilized scaling alpha / sqrt(rank) (Kalajdzievski).
        dora: Weight-decomposed adaptation (Liu et al.): W' = m (W + s B A) / ||W + s B A||_row
            with a trainable magnitude m per output, initialized to W's row norms.
        targets: Names of the Linear modules to adapt (peft matching: a full name, or the end of
            one after a dot); None adapts every nn.Linear of the base.
        dropout: Dropout on the adapter's input, in [0, 1).
    """
    if dora and init == "milora":
        raise ValueError("dora combines with init 'lora', 'gaussian', 'pissa' or 'olora', not 'milora'")
    lora = import_peft()
    names = list(targets) if targets is not None else [n for n, m in base.named_modules() if isinstance(m, nn.Linear)]
    if not names:
        raise ValueError(f"targets: the base model ({type(base).__name__}) has no nn.Linear layer to adapt")
    config = lora.LoraConfig(r=rank, lora_alpha=alpha, target_modules=names, lora_dropout=dropout,
                             use_rslora=rslora, use_dora=dora, init_lora_weights=PEFT_INIT[init])
    model = lora.inject_adapter_in_model(config, base)
    for layer in lora_layers(model):
        if init == "milora":
            minor_component_init(layer)
        layer.register_state_dict_post_hook(_base_names)
        layer.register_load_state_dict_pre_hook(_load_base_names)
        layer.register_load_state_dict_post_hook(partial(_initialize_if_new, config=config, init=init))
    return model


def lora_layers(model: nn.Module) -> list[nn.Module]:
    """The adapted layers (peft LoraLayer) of a model, in module order."""
    return [m for m in model.modules() if isinstance(m, import_peft().tuners.lora.LoraLayer)]


def minor_component_init(layer: nn.Module) -> None:
    """MiLoRA (Wang et al., 2024): the adapter starts as the r minor singular components of the base
    weight W = U S V^T, B = U_min sqrt(S_min / s), A = sqrt(S_min / s) V_min^T, and the frozen base
    keeps the rest, W - s B A (s: the adapter's scaling), so the layer computes what it did."""
    weight = layer.get_base_layer().weight
    r, s = layer.r[ADAPTER], layer.scaling[ADAPTER]
    if r > min(weight.shape):
        raise ValueError(f"rank: milora needs rank <= min(out, in) = {min(weight.shape)} of every target, got {r}")
    u, sv, vh = torch.linalg.svd(weight.detach().double(), full_matrices=False)
    root = (sv[-r:] / s).sqrt()
    b, a = u[:, -r:] * root, root[:, None] * vh[-r:]
    layer.lora_B[ADAPTER].weight.data = b.to(weight.dtype)
    layer.lora_A[ADAPTER].weight.data = a.to(weight.dtype)
    weight.data = (weight.detach().double() - s * b @ a).to(weight.dtype)


def _base_names(layer: nn.Module, state_dict: dict[str, Any], prefix: str, _metadata: Any) -> None:
    """state_dict post-hook: the base layer's tensors under the base model's names."""
    inner = prefix + "base_layer."
    for key in [k for k in state_dict if k.startswith(inner)]:
        state_dict[prefix + key.removeprefix(inner)] = state_dict.pop(key)


def _load_base_names(layer: nn.Module, state_dict: dict[str, Any], prefix: str, *_: Any) -> None:
    """load pre-hook: the base model's names back to peft's; notes whether this load brings the
    base weights without the adapter's tensors (then the post-hook initializes the adapter)."""
    own = list(layer.get_base_layer().state_dict(keep_vars=True))
    for name in own:
        if prefix + name in state_dict:
            state_dict[prefix + "base_layer." + name] = state_dict.pop(prefix + name)
    has_base = any(prefix + "base_layer." + name in state_dict for name in own)
    has_adapter = any(k.startswith(prefix + "lora_") for k in state_dict)
    setattr(layer, _REINIT, has_base and not has_adapter)


def _initialize_if_new(layer: nn.Module, _incompatible: Any, config: Any, init: str) -> None:
    """load post-hook: after base weights came without adapter tensors, initialize the adapter
    from them as at construction (peft's `update_layer`, then MiLoRA's init where chosen)."""
    if not getattr(layer, _REINIT, False):
        return
    setattr(layer, _REINIT, False)
    layer.update_layer(ADAPTER, layer.r[ADAPTER], layer.lora_alpha[ADAPTER], config=config)
    if init == "milora":
        minor_component_init(layer)
