"""Binarization-aware layers with per-entry masks (StoMPP, "Stochastic Masked Partial Progressive
Binarization", NeurIPS 2026; see specs/stompp/README.md).

A *binarization site* is one tensor a binary network binarizes: a layer's weight or the activation
entering (or leaving) a layer. Each site holds

- `keys`: one uniform random number in [0, 1) per mask entry, drawn once at construction, and
- `mask`: 1 where the entry is committed to its hard binary value sign(x), 0 where it is still the
  clipped real value hardtanh(x) = clamp(x, -1, 1).

A progression (the `progressive_binarization` callback) sets a site's progress p in [0, 1] and the
mask becomes `keys < p`: a random fraction p of the entries is binarized. Resampling a share of the
keys ("soft refresh") swaps which entries are committed without changing how many.

How the gradient treats a committed entry is the site's `policy`:

- `stompp`: STE-free. sign() has zero gradient, so a committed entry passes no gradient: a
  committed weight stops learning and a committed activation blocks the gradient to everything
  upstream of it (the paper's "gradient blockade").
- `stompp_ste`: the same masks, with the straight-through estimator (gradient of hardtanh) on the
  committed entries only.
- `ste`: vanilla STE, every entry committed from the start (mask all ones) and never changed.
- `fp`: never binarized; the clipped real-valued network (a full-precision reference).

Masks: a weight site has one entry per weight; an activation site one per feature (Linear) or per
channel (Conv, shared over positions), so a mask does not depend on the input size.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

Policy = Literal["ste", "stompp", "stompp_ste", "fp"]
POLICIES = ("ste", "stompp", "stompp_ste", "fp")
# Policies whose masks a progression drives (the others are fixed from the start).
PROGRESSIVE = ("stompp", "stompp_ste")


def hard_sign(x: torch.Tensor) -> torch.Tensor:
    """sign(x) with sign(0) = +1, so every entry is +-1."""
    return torch.where(x >= 0, 1.0, -1.0).to(x.dtype)


def check_policy(policy: str) -> None:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got '{policy}'")


class BinarizationSite(nn.Module):
    """The mask, keys and mixing rule of one binarized tensor (see the module docstring).

    Args:
        shape: Shape of the mask (the weight's shape, or (features,) / (channels, 1, 1)).
        kind: "weights" or "activations"; the callback's `what` selects sites by kind.
        policy: How committed entries are treated: ste, stompp, stompp_ste or fp.
    """

    def __init__(self, shape: tuple[int, ...], kind: Literal["weights", "activations"], policy: Policy) -> None:
        super().__init__()
        check_policy(policy)
        if kind not in ("weights", "activations"):
            raise ValueError(f"kind must be 'weights' or 'activations', got '{kind}'")
        self.kind, self.policy = kind, policy
        self.register_buffer("keys", torch.rand(shape))
        self.register_buffer("mask", torch.full(shape, 1.0 if policy == "ste" else 0.0))
        self.progress = 1.0 if policy == "ste" else 0.0
        # 0.0 / 1.0 when the mask is all zeros / all ones (a cheaper forward), None when mixed;
        # recomputed from the mask whenever a state dict is loaded into the site.
        self.uniform: float | None = self.progress
        self.register_load_state_dict_post_hook(lambda module, keys: module.sync())

    def sync(self) -> None:
        """Re-derive the cached mask state; call it after writing `mask` directly."""
        share = float(self.mask.mean())
        self.uniform = share if share in (0.0, 1.0) else None

    @property
    def progressive(self) -> bool:
        return self.policy in PROGRESSIVE

    def set_progress(self, p: float, force: bool = False) -> None:
        """Commit the entries whose key is below p (p = 1 commits all, p = 0 none); a no-op when p
        is unchanged, unless `force` (after the keys changed)."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"progress must be in [0, 1], got {p}")
        if not self.progressive:
            raise ValueError(f"a site with policy '{self.policy}' has fixed masks; only "
                             f"{' and '.join(PROGRESSIVE)} sites can be progressed")
        if p == self.progress and not force:
            return
        self.progress = float(p)
        if p >= 1.0:
            self.mask.fill_(1.0)
        elif p <= 0.0:
            self.mask.fill_(0.0)
        else:
            self.mask.copy_((self.keys < p).to(self.mask.dtype))
        self.uniform = 1.0 if p >= 1.0 else 0.0 if p <= 0.0 else None

    def refresh(self, fraction: float, generator: torch.Generator | None = None) -> None:
        """Resample the keys of a random `fraction` of the entries, then re-threshold (soft refresh)."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"refresh fraction must be in [0, 1], got {fraction}")
        device = self.keys.device
        chosen = torch.rand(self.keys.shape, generator=generator) < fraction
        fresh = torch.rand(self.keys.shape, generator=generator)
        self.keys.copy_(torch.where(chosen.to(device), fresh.to(device), self.keys))
        self.set_progress(self.progress, force=True)

    def binarized_fraction(self) -> float:
        return float(self.mask.mean())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.policy == "fp" or self.uniform == 0.0:
            return F.hardtanh(x)
        ste = self.policy in ("ste", "stompp_ste")
        if self.uniform == 1.0 and not ste:
            return hard_sign(x)  # STE-free and all committed: no gradient at all
        soft, hard = F.hardtanh(x), hard_sign(x)
        if ste:
            # Forward: hard where committed; backward: hardtanh's gradient everywhere (STE).
            delta = (hard - soft).detach()
            return soft + (delta if self.uniform == 1.0 else self.mask * delta)
        # STE-free: hard_sign has no gradient, so committed entries pass none.
        return torch.lerp(soft, hard, self.mask)

    def extra_repr(self) -> str:
        return f"kind={self.kind}, policy={self.policy}, shape={tuple(self.mask.shape)}"


class BinaryActivation(nn.Module):
    """Binarized activation: sign on committed entries, hardtanh elsewhere.

    Args:
        features: Number of features (input (N, features)) or channels (input (N, C, H, W)).
        policy: See BinarizationSite.
        conv: True for (N, C, H, W) inputs (one mask entry per channel).
    """

    def __init__(self, features: int, policy: Policy = "stompp", conv: bool = False) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be >= 1, got {features}")
        self.site = BinarizationSite((features, 1, 1) if conv else (features,), "activations", policy)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.site(x)


class BinaryLinear(nn.Linear):
    """nn.Linear whose weight goes through a binarization site (bias stays real)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = False, policy: Policy = "stompp") -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.site = BinarizationSite(tuple(self.weight.shape), "weights", policy)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.site(self.weight), self.bias)


class BinaryConv2d(nn.Conv2d):
    """nn.Conv2d whose weight goes through a binarization site (bias stays real)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, bias: bool = False, policy: Policy = "stompp") -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias)
        self.site = BinarizationSite(tuple(self.weight.shape), "weights", policy)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv_forward(x, self.site(self.weight), self.bias)


def binary_layers(model: nn.Module) -> list[list[BinarizationSite]]:
    """The model's binarization sites grouped into layers, input side first.

    A model that defines `binary_layers()` says the grouping itself (e.g. a layer's weight and the
    activation it feeds); otherwise every site is its own layer, in module registration order.
    """
    for module in model.modules():
        method = getattr(module, "binary_layers", None)
        if callable(method) and isinstance(module, nn.Module):
            return method()
    return [[m] for m in model.modules() if isinstance(m, BinarizationSite)]
