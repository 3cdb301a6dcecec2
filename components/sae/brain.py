"""Brain encoding through a sparse basis of atoms (`brain_sae`): the multisubject coupled SAE and
its baselines.

`coupled_encoding` trains an SAE (the nested `sae:`, e.g. `topk_sae` with k active atoms) on the
stimulus features x and, with `coupling` > 0, per-subject linear heads from its codes z to every
subject's voxels y_s at the same time:

    loss = MSE(decode(z), x) + coupling * MSE(z W_s + b_s, y_s) (mean over subjects) + head_l2 * |W|^2,

so the atoms are shaped by the brain as well as by the features (the multisubject coupled SAE).
`coupling: 0` is the two-stage baseline: the same SAE trained on the features alone. Either way,
after training every arm is read out the same way: scikit-learn's RidgeCV (one alpha per voxel by
efficient leave-one-out, the same alphas for every arm) from the codes of the train TRs to each
subject's responses, scored on held-out TRs.

`ridge_encoding` is the dense baseline: the same RidgeCV from the features x themselves (no
training by gradient; run with `phases: [test]`). The ridge readout is a library's (sklearn's
RidgeCV), not written here.

Logged at test (the data module's splits are read whole; both tasks log the same names):
- `val/r`, `test/r`: mean over subjects and voxels of the Pearson correlation between predicted
  and measured responses on the val (model selection) and test TRs;
- `test/transfer_r`: the held-out subject (`y_new`, never seen in training): a RidgeCV readout
  fitted on only the first `transfer_samples` train TRs (the low-data regime), scored on test;
- coupled_encoding only: `test/r_heads` (its own heads, no refit; coupling > 0), `test/fvu`
  (feature reconstruction), `test/l0` (active atoms per TR), and where the data module plants
  atoms (`planted_atoms`, (A, d)), `test/atom_recovery`: the mean over planted brain atoms of the
  largest cosine similarity with a learned dictionary atom (1: every planted atom recovered), and
  `test/nuisance_recovery` the same for the brain-irrelevant atoms (`nuisance_atoms`).

A coupled_encoding run with `phases: [test]` reads out the SAE at its random initialization: the
random-atoms floor.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from components.kinds import Model
from components.tasks.supervised import log_loss, optimizers_config
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt

DEFAULT_ALPHAS = [float(a) for a in np.logspace(-3, 5, 17)]


def voxel_correlation(prediction: np.ndarray, target: np.ndarray) -> float:
    """Mean over columns (voxels) of the Pearson correlation of prediction and target (N, V);
    a constant column (a mean predictor) counts as 0."""
    p = prediction - prediction.mean(0)
    t = target - target.mean(0)
    denominator = np.sqrt((p * p).sum(0) * (t * t).sum(0))
    r = np.divide((p * t).sum(0), denominator, out=np.zeros(p.shape[1]), where=denominator > 0)
    return float(r.mean())


def ridge_readout(train_features: np.ndarray, train_targets: np.ndarray, alphas: list[float]) -> Any:
    """scikit-learn's RidgeCV fitted from features (N, F) to targets (N, T), one alpha per target
    chosen by efficient leave-one-out over `alphas`."""
    from sklearn.linear_model import RidgeCV

    return RidgeCV(alphas=alphas, alpha_per_target=True).fit(train_features, train_targets)


def atom_recovery(learned: np.ndarray, planted: np.ndarray) -> float:
    """Mean over planted atoms (A, d) of the largest cosine similarity with a learned atom (K, d)."""
    learned = learned / np.maximum(np.linalg.norm(learned, axis=1, keepdims=True), 1e-12)
    planted = planted / np.maximum(np.linalg.norm(planted, axis=1, keepdims=True), 1e-12)
    return float((planted @ learned.T).max(1).mean())


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()


def encoding_scores(features: dict[str, np.ndarray], data: Any, alphas: list[float],
                    transfer_samples: int) -> dict[str, float]:
    """`val/r`, `test/r` and `test/transfer_r` of a RidgeCV readout from per-split features
    {"train", "val", "test"} (N, F) to the data module's responses."""
    train = data.split("train")
    y = _numpy(train["y"])
    n, subjects, voxels = y.shape
    readout = ridge_readout(features["train"], y.reshape(n, -1), alphas)
    scores = {}
    for split in ("val", "test"):
        target = _numpy(data.split(split)["y"])
        prediction = readout.predict(features[split]).reshape(-1, subjects, voxels)
        scores[f"{split}/r"] = float(np.mean([voxel_correlation(prediction[:, s], target[:, s]) for s in range(subjects)]))
    if "y_new" in train:
        if transfer_samples > n:
            raise ValueError(f"transfer_samples must be <= the {n} train TRs, got {transfer_samples}")
        new = ridge_readout(features["train"][:transfer_samples], _numpy(train["y_new"])[:transfer_samples], alphas)
        scores["test/transfer_r"] = voxel_correlation(new.predict(features["test"]), _numpy(data.split("test")["y_new"]))
    return scores


def _datamodule(module: L.LightningModule, task: str) -> Any:
    data = getattr(module.trainer, "datamodule", None)
    if data is None or not hasattr(data, "split"):
        raise RuntimeError(f"{task} needs an in-memory data module with split() (synthetic_semantic_brain, story_fmri)")
    return data


class CoupledEncoding(L.LightningModule):
    """The multisubject coupled SAE (coupling > 0) or the two-stage SAE (coupling = 0).

    Args:
        sae: The sparse autoencoder (`topk_sae`, `batchtopk_sae`): encode, decode,
            normalize_decoder, init_decoder_bias, W_dec (the atoms), n_latents.
        optimizer: Factory called with the SAE's and the heads' parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        coupling: Weight of the subjects' encoding loss (0: the features alone, two-stage).
        head_l2: Ridge penalty on the heads' weights (mean of squares) in the training loss.
        alphas: The ridge readout's alphas (RidgeCV), the same in every arm.
        transfer_samples: Train TRs of the held-out subject its readout is fitted on.
    """

    def __init__(
        self,
        sae: Model,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., dict[str, Any]] | None = None,
        coupling: NonNegativeFloat = 1.0,
        head_l2: NonNegativeFloat = 1.0e-4,
        alphas: list[PositiveFloat] = DEFAULT_ALPHAS,
        transfer_samples: PositiveInt = 100,
    ) -> None:
        super().__init__()
        for method in ("encode", "decode", "normalize_decoder", "init_decoder_bias"):
            if not callable(getattr(sae, method, None)):
                raise ValueError(f"sae must provide {method}(); got {type(sae).__name__}")
        self.sae = sae
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.coupling, self.head_l2 = coupling, head_l2
        self.alphas, self.transfer_samples = list(alphas), transfer_samples
        self.heads_weight: nn.Parameter | None = None
        self.heads_bias: nn.Parameter | None = None
        self.register_buffer("bias_initialized", torch.tensor(False))

    def setup(self, stage: str) -> None:
        warnings.filterwarnings("ignore", message=r".*`validation_step`.*")
        if self.heads_weight is None:
            y = _datamodule(self, "coupled_encoding").split("train")["y"]
            if y.ndim != 3:
                raise ValueError(f"coupled_encoding needs responses y of shape (N, subjects, voxels), got {tuple(y.shape)}")
            subjects, voxels = y.shape[1:]
            self.heads_weight = nn.Parameter(torch.zeros(subjects, self.sae.n_latents, voxels))
            self.heads_bias = nn.Parameter(torch.zeros(subjects, voxels))

    def configure_optimizers(self) -> Any:
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, self.parameters())

    def heads(self, z: torch.Tensor) -> torch.Tensor:
        """Every subject's predicted responses (N, S, V) from codes z (N, K)."""
        return torch.einsum("nk,skv->nsv", z, self.heads_weight) + self.heads_bias

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch["x"].float(), batch["y"].float()
        if not self.bias_initialized:
            self.sae.init_decoder_bias(x.mean(0))
            self.bias_initialized.fill_(True)
        z = self.sae.encode(x)
        loss = F.mse_loss(self.sae.decode(z), x)
        if self.coupling > 0:
            encoding = F.mse_loss(self.heads(z), y)
            loss = loss + self.coupling * encoding + self.head_l2 * self.heads_weight.pow(2).mean()
            self.log("train/encoding_mse", encoding, on_step=True, on_epoch=False, batch_size=len(x))
        log_loss(self, "train", loss, len(x))
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.sae.normalize_decoder()

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        pass  # everything is scored on whole splits at the end of the test epoch

    @torch.no_grad()
    def on_test_epoch_end(self) -> None:
        data = _datamodule(self, "coupled_encoding")
        codes = {split: self.sae.encode(data.split(split)["x"].float().to(self.device)) for split in ("train", "val", "test")}
        for name, value in encoding_scores({s: _numpy(z) for s, z in codes.items()}, data, self.alphas,
                                           self.transfer_samples).items():
            self.log(name, value)
        test = data.split("test")
        x = test["x"].float().to(self.device)
        x_hat = self.sae.decode(codes["test"])
        self.log("test/fvu", float((x - x_hat).pow(2).sum() / (x - x.mean(0)).pow(2).sum().clamp_min(1e-30)))
        self.log("test/l0", float((codes["test"] > 0).float().sum(1).mean()))
        if self.coupling > 0:
            prediction, target = _numpy(self.heads(codes["test"])), _numpy(test["y"])
            self.log("test/r_heads", float(np.mean([voxel_correlation(prediction[:, s], target[:, s])
                                                    for s in range(target.shape[1])])))
        dictionary = _numpy(self.sae.W_dec)
        for name, attribute in (("atom_recovery", "planted_atoms"), ("nuisance_recovery", "nuisance_atoms")):
            planted = getattr(data, attribute, None)
            if planted is not None and len(planted):
                self.log(f"test/{name}", atom_recovery(dictionary, np.asarray(planted)))


class RidgeEncoding(L.LightningModule):
    """The dense ridge encoding model: RidgeCV from the features x to every subject's responses,
    fitted at test time on the train TRs (run with `phases: [test]`).

    Args:
        alphas: The ridge alphas (RidgeCV, one per voxel by efficient leave-one-out).
        transfer_samples: Train TRs of the held-out subject its readout is fitted on.
    """

    def __init__(self, alphas: list[PositiveFloat] = DEFAULT_ALPHAS, transfer_samples: PositiveInt = 100) -> None:
        super().__init__()
        self.alphas, self.transfer_samples = list(alphas), transfer_samples

    def training_step(self, batch: Any, batch_idx: int) -> None:
        raise RuntimeError("task 'ridge_encoding' fits its ridge at test time: run it with `phases: [test]`")

    def configure_optimizers(self) -> None:
        return None

    def test_step(self, batch: Any, batch_idx: int) -> None:
        pass  # the ridge is fitted and scored on whole splits at the end of the test epoch

    def on_test_epoch_end(self) -> None:
        data = _datamodule(self, "ridge_encoding")
        features = {split: _numpy(data.split(split)["x"]) for split in ("train", "val", "test")}
        for name, value in encoding_scores(features, data, self.alphas, self.transfer_samples).items():
            self.log(name, value)
