"""Discrete diffusion language modelling: train a bidirectional denoiser on the continuous-time
ELBO of a masked (MDLM) or hierarchical (HDLM, LHDLM) forward process.

Paper: LHDLM ("Learnable Hierarchical Diffusion Language Model", NeurIPS 2026; specs/lhdlm/README.md).
`objective` picks the forward process:

- `mdlm`: token -> mask (components/generative/masked_diffusion.py); the denoiser's input ids are
  the V tokens and the mask V.
- `hdlm`: token -> cluster -> mask with a fixed one-hot Gamma, the data's planted partition
  (`token_clusters` of the data module): HDLM with an oracle hierarchy.
- `lhdlm`: the same with a learnable Gamma (`ClusterMap` `learnable`), trained jointly on the ELBO
  plus `info_retention` x (log C - I(X; K)) (components/discrete_diffusion/cluster_map.py).

The hierarchical objectives read ids V .. V + C - 1 as clusters and V + C as the mask
(components/discrete_diffusion/hierarchical.py); the model (e.g. `causal_lm` with
`softmax_attention(causal: false)`, a bidirectional transformer) maps ids (B, L) to logits whose
first V entries are read. No time input: the number of hidden positions tells the noise level
(MDLM trains without one).

Batches: {"x": token ids (B, L)}. Logged: `train/loss` (NELBO per token + regularizer), and for
val and test `<split>/nelbo`: the CT-ELBO bound on -log p(x) in nats per token, estimated with
`eval_repeats` stratified times per sequence and noise drawn from `eval_seed` (the same times for
every objective). For `hdlm` and `lhdlm` on data with a planted partition also `<split>/ari`,
`<split>/gamma_entropy_function`, `<split>/gamma_entropy_content`, `<split>/gamma_entropy_gap`,
`<split>/largest_cluster_share`
and `<split>/cluster_information` (`hierarchy_report`).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import lightning as L
import numpy as np
import torch
from torch import nn

from components.discrete_diffusion.cluster_map import ClusterMap, hierarchy_report, info_retention
from components.discrete_diffusion.hierarchical import HierarchicalDiffusion
from components.generative.masked_diffusion import MaskedDiffusion, diffusion_times
from components.tasks.supervised import log_loss, optimizers_config, scaled_groups
from components.types import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

OBJECTIVES = ("mdlm", "hdlm", "lhdlm")


class DiscreteDiffusionLM(L.LightningModule):
    """Train a denoiser on a discrete diffusion CT-ELBO (module docstring).

    Args:
        model: The denoiser (runtime, from `model:`): ids (B, L) -> logits (B, L, >= V); its
            `vocab_size` must cover the input ids (V + 1 for mdlm, V + C + 1 otherwise).
        optimizer: Factory called with the parameters (the denoiser's and a learnable Gamma's).
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        objective: `mdlm`, `hdlm` or `lhdlm`.
        vocab_size: V, the data's tokens.
        num_clusters: C, the clusters of hdlm / lhdlm (hdlm: the data's planted ones).
        schedule: The token schedule alpha_t, `linear` or `cosine`.
        info_retention: Weight of the information-retention regularizer (lhdlm); 0 turns it off.
        gamma_init_scale: Standard deviation of a learnable Gamma's initial logits (a uniform
            Gamma is a stationary point of I(X; K): the spread breaks the symmetry).
        gamma_lr_scale: A learnable Gamma's learning rate as a multiple of the optimizer's.
        eval_repeats: Times t drawn per validation / test sequence.
        eval_seed: Seed of the validation / test noise (times, masks, clusters).
    """

    LOGGED_METRICS = ("train/loss", "{split}/nelbo", "{split}/ari", "{split}/gamma_entropy_function",
                      "{split}/gamma_entropy_content", "{split}/gamma_entropy_gap", "{split}/largest_cluster_share",
                      "{split}/cluster_information")

    def __init__(
        self,
        model: nn.Module,
        vocab_size: PositiveInt,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
        objective: Literal["mdlm", "hdlm", "lhdlm"] = "mdlm",
        num_clusters: PositiveInt = 6,
        schedule: Literal["linear", "cosine"] = "linear",
        info_retention: NonNegativeFloat = 0.0,
        gamma_init_scale: PositiveFloat = 1.0,
        gamma_lr_scale: PositiveFloat = 1.0,
        eval_repeats: PositiveInt = 4,
        eval_seed: NonNegativeInt = 0,
    ) -> None:
        super().__init__()
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        hierarchical = objective != "mdlm"
        needed = vocab_size + (num_clusters + 1 if hierarchical else 1)
        model_vocab = getattr(model, "vocab_size", None)
        if model_vocab is not None and model_vocab < needed:
            raise ValueError(f"the model's vocab_size must be >= {needed} (V = {vocab_size} tokens"
                             f"{f' + {num_clusters} clusters' if hierarchical else ''} + the mask), got {model_vocab}")
        if info_retention and objective != "lhdlm":
            raise ValueError(f"info_retention applies to the learnable map of lhdlm, not to {objective}")
        self.model, self.objective, self.vocab_size = model, objective, vocab_size
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.info_retention, self.eval_repeats, self.eval_seed = info_retention, eval_repeats, eval_seed
        self.num_clusters, self.gamma_lr_scale = num_clusters, gamma_lr_scale
        self.masked = MaskedDiffusion(vocab_size, vocab_size, schedule)
        self.hierarchical = HierarchicalDiffusion(vocab_size, num_clusters, schedule)
        self.cluster_map: ClusterMap | None = None
        if objective == "lhdlm":
            self.cluster_map = ClusterMap(num_clusters, vocab_size, "learnable", init_scale=gamma_init_scale)

    def setup(self, stage: str) -> None:
        """hdlm takes its one-hot Gamma from the data's planted partition."""
        if self.objective == "hdlm" and self.cluster_map is None:
            clusters = self._planted()
            if clusters is None:
                raise ValueError("objective hdlm needs data with a planted partition (token_clusters), "
                                 "e.g. hierarchical_language")
            self.cluster_map = ClusterMap(self.num_clusters, self.vocab_size, "planted",
                                          clusters=torch.as_tensor(clusters)).to(self.device)

    def _planted(self) -> np.ndarray | None:
        trainer = getattr(self, "_trainer", None)
        return getattr(getattr(trainer, "datamodule", None), "token_clusters", None)

    # -- objective ----------------------------------------------------------------------------

    def nelbo(self, x: torch.Tensor, t: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The one-sample CT-ELBO estimate per sequence, nats (B,)."""
        if self.cluster_map is None:
            z = self.masked.corrupt(x, t, generator)
            return self.masked.nelbo(self.model(z), x, z, t)
        log_gamma = self.cluster_map.log_gamma()
        z = self.hierarchical.corrupt(x, t, log_gamma, generator)
        return self.hierarchical.nelbo(self.model(z), x, z, t, log_gamma)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x = batch["x"]
        loss = self.nelbo(x, diffusion_times(len(x), x.device)).mean() / x.shape[1]
        if self.info_retention:
            token_probs = torch.bincount(x.reshape(-1), minlength=self.vocab_size).float() / x.numel()
            loss = loss + self.info_retention * info_retention(self.cluster_map.gamma(), token_probs)
        log_loss(self, "train", loss, len(x))
        return loss

    def _eval_step(self, batch: dict[str, torch.Tensor], batch_idx: int, split: str) -> None:
        x = batch["x"].repeat(self.eval_repeats, 1)
        generator = torch.Generator().manual_seed(self.eval_seed * 100_003 + batch_idx)
        nelbo = self.nelbo(x, diffusion_times(len(x), x.device, generator), generator).mean() / x.shape[1]
        self.log(f"{split}/nelbo", nelbo, on_epoch=True, batch_size=len(batch["x"]), sync_dist=True,
                 prog_bar=split == "val")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, batch_idx, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, batch_idx, "test")

    def on_validation_epoch_end(self) -> None:
        self._log_hierarchy("val")

    def on_test_epoch_end(self) -> None:
        self._log_hierarchy("test")

    def _log_hierarchy(self, split: str) -> None:
        planted = self._planted()
        if self.cluster_map is None or planted is None or self.trainer.sanity_checking:
            return
        function_cluster = self.trainer.datamodule.function_cluster
        for name, value in hierarchy_report(self.cluster_map.gamma(), planted, function_cluster).items():
            self.log(f"{split}/{name}", value)

    def configure_optimizers(self) -> Any:
        if self.optimizer_factory is None:
            raise RuntimeError("discrete_diffusion_lm trains a denoiser: give the spec an `optimizer:`")
        groups = [{"name": "denoiser", "params": list(self.model.parameters())}]
        if self.cluster_map is not None and self.cluster_map.kind == "learnable":
            groups.append({"name": "gamma", "params": [self.cluster_map.logits], "lr_scale": self.gamma_lr_scale})
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory,
                                 scaled_groups(groups, self.optimizer_factory))
