"""Sparse-autoencoder training on a frozen model's activations (dictionary learning).

The paradigm of `sae_replay` (and other SAE papers): a frozen network (`model:`, weights loaded
by `init:` from an earlier stage or spec, or a pretrained checkpoint the model node reads) is read
at one internal site, and an SAE (the nested `sae:` node, models table) learns to reconstruct the
activation vectors there with few active latents.

Data: batches {"x": (B, d)} of activation vectors. With `activation_buffer` the vectors are the
frozen model's own: in `setup` the task hands the data module its extractor
(`datamodule.attach(self.activations)`), which runs the model on token ids and returns the vectors
at `site`. Without a model (`model:` omitted) the batches are used as given (e.g. synthetic data).

Per step: x_hat = sae.decode(sae.encode(x)); loss = MSE(x_hat, x) (or the spec's `loss:`, called as
loss(x_hat, {"x": x, "y": x})); after each optimizer step the decoder atoms are renormalized. On
the first training batch b_dec starts at that batch's mean.

Logged: `train/loss`, `train/fvu` (per batch), `train/l0`; for val and test, on fresh vectors:
`<split>/fvu` (fraction of variance unexplained), `<split>/explained_variance`, `<split>/mse`,
`<split>/l0` (mean active latents per vector) and `<split>/dead_fraction` (latents that never fire
on that split).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

from components.kinds import Model
from components.sae.metrics import FractionOfVarianceUnexplained
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeInt


class _StopForward(Exception):
    """Raised by the site hook: the rest of the model's forward pass is not needed."""


class SAETraining(L.LightningModule):
    """Train an SAE on the activations of a frozen model at one site.

    Args:
        sae: The sparse autoencoder (`topk_sae`, `batchtopk_sae`): encode, decode,
            normalize_decoder, init_decoder_bias.
        optimizer: Factory called with the SAE's parameters (the model stays frozen).
        model: The frozen source network (runtime, from `model:`); None when the data are vectors.
        loss: Optional reconstruction loss (runtime, from `loss:`); None: mean squared error.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        site: Dotted name of the model's submodule whose output is read (`blocks.0` for
            `transformer_lm`, `lm.model.layers.15` for `pretrained_causal_lm`); the first element
            of a tuple output; leading dimensions are flattened into vectors.
        skip_positions: Leave out the first positions of every sequence (e.g. 1 for LLMs, whose
            first position is an attention sink with outsized norm); only for (B, L, d) outputs.
        save_model_weights: Keep the frozen model's weights in this task's checkpoints; false for
            pretrained multi-GB models that the model node reloads anyway.
    """

    def __init__(
        self,
        sae: Model,
        optimizer: Callable[..., torch.optim.Optimizer],
        model: nn.Module | None = None,
        loss: nn.Module | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
        site: str | None = None,
        skip_positions: NonNegativeInt = 0,
        save_model_weights: bool = True,
    ) -> None:
        super().__init__()
        for method in ("encode", "decode", "normalize_decoder", "init_decoder_bias"):
            if not callable(getattr(sae, method, None)):
                raise ValueError(f"sae must provide {method}(); got {type(sae).__name__}")
        if model is not None:
            if not site:
                raise ValueError("site must name a submodule of the model whose output the SAE reads, got none")
            names = [name for name, _ in model.named_modules() if name]
            if site not in names:
                near = [n for n in names if n.count(".") == site.count(".")][:8]
                raise ValueError(f"site '{site}' is no submodule of {type(model).__name__}; e.g. {', '.join(near)}")
            model.requires_grad_(False)
            model.eval()
        self.sae, self.model, self.loss = sae, model, loss
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.site, self.skip_positions, self.save_model_weights = site, skip_positions, save_model_weights
        self.split_fvu = nn.ModuleDict({s: FractionOfVarianceUnexplained() for s in ("val", "test")})
        self.register_buffer("bias_initialized", torch.tensor(False))
        self._fired: dict[str, torch.Tensor] = {}

    # -- the frozen model ---------------------------------------------------------------------

    def train(self, mode: bool = True) -> "SAETraining":
        super().train(mode)
        if self.model is not None:
            self.model.eval()  # frozen: no dropout while reading activations
        return self

    @torch.no_grad()
    def activations(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The vectors at `site` for a token batch {"x": (B, L)}: (B*(L - skip_positions), d), float32."""
        if self.model is None:
            raise RuntimeError("sae_training without a model has no activations to read; give a model: section")
        captured: list[torch.Tensor] = []

        def hook(module: nn.Module, inputs: Any, output: Any) -> None:
            captured.append(output[0] if isinstance(output, (tuple, list)) else output)
            raise _StopForward

        handle = self.model.get_submodule(self.site).register_forward_hook(hook)
        try:
            self.model(batch["x"].to(self.device))
        except _StopForward:
            pass
        finally:
            handle.remove()
        vectors = captured[0]
        if self.skip_positions:
            if vectors.ndim != 3 or vectors.shape[1] <= self.skip_positions:
                raise ValueError(f"skip_positions = {self.skip_positions} needs (B, L, d) activations with "
                                 f"L > {self.skip_positions}, got {tuple(vectors.shape)} at site '{self.site}'")
            vectors = vectors[:, self.skip_positions :]
        vectors = vectors.reshape(-1, vectors.shape[-1]).float()
        if vectors.shape[1] != self.sae.d_in:
            raise ValueError(f"sae.d_in is {self.sae.d_in} but the activations at site '{self.site}' have width {vectors.shape[1]}")
        return vectors

    def setup(self, stage: str) -> None:
        # The frozen model stays in eval mode during fit on purpose (see `train`).
        warnings.filterwarnings("ignore", message=r".*module\(s\) in eval mode at the start of training.*")
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if self.model is not None and callable(getattr(datamodule, "attach", None)):
            datamodule.attach(self.activations)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        state = super().state_dict(*args, **kwargs)
        if not self.save_model_weights:
            prefix = kwargs.get("prefix", args[1] if len(args) > 1 else "")
            for key in [k for k in state if k.startswith(f"{prefix}model.")]:
                del state[key]
        return state

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        if not self.save_model_weights and self.model is not None:
            own = {f"model.{k}": v for k, v in self.model.state_dict().items()}
            state_dict = {**own, **state_dict}
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    # -- steps --------------------------------------------------------------------------------

    def _reconstruct(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        z = self.sae.encode(x)
        x_hat = self.sae.decode(z)
        loss = F.mse_loss(x_hat, x) if self.loss is None else self.loss(x_hat, {"x": x, "y": x})
        return z, x_hat, loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x = batch["x"].float()
        if not self.bias_initialized:
            self.sae.init_decoder_bias(x.mean(0))
            self.bias_initialized.fill_(True)
        z, x_hat, loss = self._reconstruct(x)
        with torch.no_grad():
            fvu = (x - x_hat).pow(2).sum() / (x - x.mean(0)).pow(2).sum().clamp_min(1e-30)
        size = len(x)
        log_loss(self, "train", loss, size)
        self.log("train/fvu", fvu, on_step=True, on_epoch=False, batch_size=size)
        self.log("train/l0", (z > 0).float().sum(1).mean(), on_step=True, on_epoch=False, batch_size=size)
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.sae.normalize_decoder()

    def _eval_step(self, batch: dict[str, torch.Tensor], split: str) -> None:
        x = batch["x"].float()
        z, x_hat, _ = self._reconstruct(x)
        size = len(x)
        self.split_fvu[split].update(x_hat, {"x": x})
        self.log(f"{split}/mse", (x - x_hat).pow(2).sum(1).mean(), on_epoch=True, batch_size=size, sync_dist=True)
        self.log(f"{split}/l0", (z > 0).float().sum(1).mean(), on_epoch=True, batch_size=size, sync_dist=True)
        fired = (z > 0).any(0)
        self._fired[split] = fired if split not in self._fired else self._fired[split] | fired

    def _eval_epoch_end(self, split: str) -> None:
        fvu = self.split_fvu[split].compute()
        self.split_fvu[split].reset()
        self.log(f"{split}/fvu", fvu, prog_bar=split == "val")
        self.log(f"{split}/explained_variance", 1.0 - fvu)
        fired = self._fired.pop(split, None)
        if fired is not None:
            self.log(f"{split}/dead_fraction", 1.0 - fired.float().mean())

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "test")

    def on_validation_epoch_end(self) -> None:
        self._eval_epoch_end("val")

    def on_test_epoch_end(self) -> None:
        self._eval_epoch_end("test")

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.sae.parameters())
