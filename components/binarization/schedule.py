"""The StoMPP progression schedule (Stochastic Masked Partial Progressive Binarization, NeurIPS 2026;
see specs/stompp/README.md) as a Lightning callback.

Over the progression window (from `start_fraction` to `end_fraction` of the training steps) the
model's binary layers (`binary_layers()`, input side first) are binarized one after another in the
given order: with n layers and window position s in [0, 1], the k-th layer in the order has
progress p_k = clip(n * s - k, 0, 1), i.e. a random fraction p_k of its mask entries is committed to
sign(). `global` progresses every layer together (p = s). Every `refresh_period` steps a share
`refresh_fraction` of each site's mask keys is resampled ("soft refresh"): which entries are
committed changes, how many does not. Testing always evaluates the fully binarized network.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from lightning.pytorch.callbacks import Callback

from components.binarization.binarize import PROGRESSIVE, BinarizationSite, binary_layers
from components.types import NonNegativeInt, Probability, ProperFraction


class ProgressiveBinarization(Callback):
    """Drive the binarization masks of a StoMPP model layer by layer.

    Args:
        order: forward (input to output, the paper's method), reverse (output to input), random
            (a permutation drawn from `seed`), or global (all layers at once).
        what: Which sites progress: weights, activations, or both. Sites not selected stay real
            (hardtanh) throughout, so `weights` trains a binary-weight network with real activations.
        start_fraction: Share of the training steps before the progression starts, in [0, 1).
        end_fraction: Share of the training steps at which every selected entry is binary, in
            (start_fraction, 1].
        refresh_period: Resample mask keys every this many steps; 0 disables the refresh.
        refresh_fraction: Share of each site's keys resampled at a refresh, in [0, 1].
        seed: Seed of the random order and of the refresh draws.
        log_every_n_steps: Log `train/binarized_weights` and `train/binarized_activations` (the
            committed share of the selected entries) every this many steps; 0 disables it.
    """

    def __init__(
        self,
        order: Literal["forward", "reverse", "random", "global"] = "forward",
        what: Literal["weights", "activations", "both"] = "both",
        start_fraction: ProperFraction = 0.0,
        end_fraction: Probability = 0.85,
        refresh_period: NonNegativeInt = 20,
        refresh_fraction: Probability = 0.1,
        seed: int = 0,
        log_every_n_steps: NonNegativeInt = 10,
    ) -> None:
        super().__init__()
        if order not in ("forward", "reverse", "random", "global"):
            raise ValueError(f"order must be one of forward, reverse, random, global, got '{order}'")
        if what not in ("weights", "activations", "both"):
            raise ValueError(f"what must be one of weights, activations, both, got '{what}'")
        if end_fraction <= start_fraction:
            raise ValueError(f"end_fraction must be in (start_fraction={start_fraction}, 1], got {end_fraction}")
        self.order, self.what = order, what
        self.start_fraction, self.end_fraction = start_fraction, end_fraction
        self.refresh_period, self.refresh_fraction = refresh_period, refresh_fraction
        self.seed, self.log_every_n_steps = seed, log_every_n_steps
        self.layers: list[list[BinarizationSite]] = []
        self.total_steps = 1
        self.generator = torch.Generator().manual_seed(seed)

    # -- schedule ---------------------------------------------------------------------------------

    def selected(self, site: BinarizationSite) -> bool:
        return self.what == "both" or site.kind == self.what

    def setup_layers(self, model: torch.nn.Module) -> None:
        """Find and order the layers; the random order is drawn once from `seed`."""
        layers = [[s for s in layer if self.selected(s)] for layer in binary_layers(model)]
        layers = [layer for layer in layers if layer]
        if not layers:
            raise ValueError(
                f"progressive_binarization found no {'' if self.what == 'both' else self.what + ' '}"
                "binarization sites in the model; use a binary model (binary_mlp, binary_resnet)"
            )
        fixed = sorted({s.policy for layer in layers for s in layer if s.policy not in PROGRESSIVE})
        if fixed:
            raise ValueError(
                f"progressive_binarization drives masks of policy {' or '.join(PROGRESSIVE)}, but the model's "
                f"policy is {', '.join(fixed)} (fixed masks); set model.policy to stompp or stompp_ste, "
                "or remove the callback"
            )
        if self.order == "reverse":
            layers = layers[::-1]
        elif self.order == "random":
            # Its own generator: the order must not depend on how many refreshes came before (resume).
            order = torch.randperm(len(layers), generator=torch.Generator().manual_seed(self.seed)).tolist()
            layers = [layers[i] for i in order]
        self.layers = layers

    def window_position(self, step: int) -> float:
        """s in [0, 1]: how far the progression window has advanced at `step`."""
        t = step / max(self.total_steps, 1)
        s = (t - self.start_fraction) / (self.end_fraction - self.start_fraction)
        return min(max(s, 0.0), 1.0)

    def layer_progress(self, s: float) -> list[float]:
        """Progress of each layer (in progression order) at window position s."""
        n = len(self.layers)
        if self.order == "global":
            return [s] * n
        return [min(max(n * s - k, 0.0), 1.0) for k in range(n)]

    def apply(self, s: float) -> None:
        for layer, p in zip(self.layers, self.layer_progress(s)):
            for site in layer:
                site.set_progress(p)

    def binarized_share(self, kind: str) -> float:
        """Committed share of the selected entries of one kind (0 when none is selected)."""
        sites = [s for layer in self.layers for s in layer if s.kind == kind]
        total = sum(s.mask.numel() for s in sites)
        return sum(float(s.mask.sum()) for s in sites) / total if total else 0.0

    # -- hooks ------------------------------------------------------------------------------------

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        self.setup_layers(pl_module)
        self.total_steps = int(trainer.estimated_stepping_batches)
        self.apply(self.window_position(trainer.global_step))

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if self.refresh_period and step > 0 and step % self.refresh_period == 0:
            for layer in self.layers:
                for site in layer:
                    site.refresh(self.refresh_fraction, self.generator)
        self.apply(self.window_position(step))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.log_every_n_steps and trainer.global_step % self.log_every_n_steps == 0:
            for kind in ("weights", "activations"):
                pl_module.log(f"train/binarized_{kind}", self.binarized_share(kind), on_step=True, on_epoch=False)

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        # The paper evaluates the fully binarized network, whatever point training stopped at.
        if not self.layers:
            self.setup_layers(pl_module)
        self.apply(1.0)

    def on_test_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        for kind in ("weights", "activations"):
            pl_module.log(f"test/binarized_{kind}", self.binarized_share(kind))

    def state_dict(self) -> dict[str, Any]:
        # Masks and keys are model buffers (checkpointed with the weights); the refresh RNG is ours.
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.generator.set_state(state_dict["generator"])
