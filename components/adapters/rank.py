"""How many directions a low-rank adapter's update really uses: a callback that logs the effective
rank of every adapted layer's weight update Delta W, for LoRA-family adapters (peft, `peft_lora`)
and PoLAR (`polar_adapter`) alike. "Rank collapse" (PoLAR, Lion et al. 2025): LoRA's B A tends to
a few dominant directions, its effective rank far below the nominal rank r."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import Callback

from components.adapters.polar import effective_rank, polar_delta_weight, polar_layers, stiefel_distance


def adapter_updates(model: Any) -> list[tuple[Any, Any]]:
    """(nominal rank, Delta W) of each adapted layer of the model, in module order: PoLAR's
    s U Theta V^T and peft LoRA's s B A (DoRA's magnitude left aside)."""
    updates = [(int(layer.polar_theta.shape[0]), polar_delta_weight(layer)) for layer in polar_layers(model)]
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:  # no peft: no LoRA layers either
        return updates
    for layer in model.modules():
        if isinstance(layer, LoraLayer):
            for name in layer.active_adapters:
                updates.append((int(layer.r[name]), layer.get_delta_weight(name)))
    return updates


class UpdateRank(Callback):
    """Logs, at the end of each test epoch (and each training epoch with `on_train: true`):
    `test/update_effective_rank`, the mean over adapted layers of the effective rank of Delta W
    (exp of the entropy of its normalized singular values; 1 to r);
    `test/update_effective_rank_fraction`, the same divided by the nominal rank r; and, for PoLAR,
    `test/stiefel_distance`, the largest ||X^T X - I||_F over its U and V factors (how far the
    landing step let them drift from orthonormal). A model without adapters is an error.

    Args:
        on_train: Also log the train/ values at each training epoch's end.
    """

    def __init__(self, on_train: bool = False) -> None:
        self.on_train = on_train

    def _log(self, pl_module: Any, split: str) -> None:
        model = getattr(pl_module, "model", pl_module)
        updates = adapter_updates(model)
        if not updates:
            raise ValueError("update_rank: the model has no adapted layer (peft LoRA or PoLAR)")
        ranks = [effective_rank(delta) for _, delta in updates]
        pl_module.log(f"{split}/update_effective_rank", sum(ranks) / len(ranks), on_step=False, on_epoch=True)
        fractions = [e / r for e, (r, _) in zip(ranks, updates)]
        pl_module.log(f"{split}/update_effective_rank_fraction", sum(fractions) / len(fractions),
                      on_step=False, on_epoch=True)
        layers = polar_layers(model)
        if layers:
            distance = max(max(stiefel_distance(layer.polar_u.detach()), stiefel_distance(layer.polar_v.detach()))
                           for layer in layers)
            pl_module.log(f"{split}/stiefel_distance", distance, on_step=False, on_epoch=True)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self.on_train:
            self._log(pl_module, "train")

    def on_test_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._log(pl_module, "test")
