"""The `genome_lm` task (`bacbench`): train a genomic LM, then run the benchmark on it.

Training (`objective`):
- `protein_mlm`: masked-residue prediction with the protein encoder (`mask_rate` of the residues
  of every protein in the batch replaced by the mask token; cross-entropy on them): the protein LM;
- `phenotype`: the genome context model, on the frozen protein encoder's embeddings (its weights come from a protein_mlm run through `init`), trained on the genome-level
  label (cross-entropy of its head on the mean of its gene states).

The benchmark (at test, on whole splits of genomes):
- gene level, the same for every arm: the embeddings named by `representation` (`protein`: the
  protein encoder's; `context`: the context model's gene states) are frozen and a scikit-learn
  probe (StandardScaler + LogisticRegression with C = `probe_c`, fixed before any run) is fitted on
  the genes of the first `probe_genomes` train genomes and scored on the test genomes':
  `test/gene_function_accuracy`;
- genome level: a model with a context model scores its own head (`test/phenotype_auroc`,
  `test/phenotype_accuracy`); a protein-only model gets the same probe on the mean of its genes'
  protein embeddings.
Probes are scikit-learn's; the objectives are a few lines each.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Literal

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from components.genomics.data import PAD
from components.genomics.models import MASK
from components.tasks.supervised import log_loss, optimizers_config
from components.types import PositiveFloat, PositiveInt, Probability


def probe_scores(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], c: float) -> dict[str, float]:
    """Accuracy (and AUROC for two classes) of a standardized logistic-regression probe."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000)).fit(*train)
    scores = {"accuracy": float(probe.score(*test))}
    if len(probe.classes_) == 2:
        scores["auroc"] = float(roc_auc_score(test[1], probe.predict_proba(test[0])[:, 1]))
    return scores


class GenomeLM(L.LightningModule):
    """A genomic LM and its benchmark (module docstring).

    Args:
        model: The genomic LM (`genomic_lm`: a protein encoder, and a context model or null).
        optimizer: Factory called with the trained parameters.
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        objective: protein_mlm or phenotype (which part of the model trains).
        representation: protein or context (which embeddings the benchmark probes read).
        mask_rate: Share of residues masked (protein_mlm).
        probe_c: Inverse L2 strength of the logistic-regression probes.
        probe_genomes: Train genomes whose genes the gene-level probe is fitted on (the first ones).
    """

    def __init__(self, model: nn.Module, optimizer: Callable[..., torch.optim.Optimizer],
                 scheduler: Callable[..., dict[str, Any]] | None = None,
                 objective: Literal["protein_mlm", "phenotype"] = "protein_mlm",
                 representation: Literal["protein", "context"] = "protein", mask_rate: Probability = 0.15,
                 probe_c: PositiveFloat = 1.0, probe_genomes: PositiveInt = 250) -> None:
        super().__init__()
        if getattr(model, "context", None) is None and (objective == "phenotype" or representation == "context"):
            raise ValueError("objective phenotype and representation context need a genomic_lm with a `context` model")
        self.model = model
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.objective, self.representation = objective, representation
        self.mask_rate, self.probe_c, self.probe_genomes = mask_rate, probe_c, probe_genomes
        self.embedding_stats: tuple[torch.Tensor, torch.Tensor] | None = None
        if objective == "phenotype":
            self.protein.requires_grad_(False)  # frozen: the context model reads its embeddings

    @property
    def protein(self) -> nn.Module:
        return self.model.protein

    @property
    def context(self) -> nn.Module | None:
        return self.model.context

    def configure_optimizers(self) -> Any:
        trained = self.protein if self.objective == "protein_mlm" else self.context
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, trained.parameters())

    def setup(self, stage: str) -> None:
        warnings.filterwarnings("ignore", message=r".*`validation_step`.*")

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x = batch["x"]
        if self.objective == "protein_mlm":
            masked = (torch.rand(x.shape, device=x.device) < self.mask_rate) & (x != PAD)
            logits = self.protein.logits(torch.where(masked, MASK, x))
            loss = F.cross_entropy(logits[masked], x[masked]) if masked.any() else logits.sum() * 0
        else:
            loss = F.cross_entropy(self.context(self.embedded(x)), batch["y"])
        log_loss(self, "train", loss, len(x))
        return loss

    def test_step(self, batch: Any, batch_idx: int) -> None:
        pass  # the benchmark probes whole splits at the end of the test epoch

    def embedded(self, x: torch.Tensor) -> torch.Tensor:
        """Protein embeddings (N, G, d) of genomes x from the frozen protein encoder, standardized
        per dimension with the train genomes' statistics (computed once, at the first call)."""
        with torch.no_grad():
            if self.embedding_stats is None:
                train = torch.cat([self.protein.embed(p.to(self.device)) for p in self.trainer.datamodule.split("train")["x"].split(64)])
                self.embedding_stats = (train.mean((0, 1)), train.std((0, 1)).clamp_min(1e-6))
            mean, std = self.embedding_stats
            return (self.protein.embed(x) - mean) / std

    @torch.no_grad()
    def gene_embeddings(self, x: torch.Tensor) -> np.ndarray:
        """(N, G, d) embeddings of the genes of genomes x (N, G, P), as `representation` names."""
        chunks = []
        for part in x.split(64):
            part = part.to(self.device)
            genes = self.context.contextual(self.embedded(part)) if self.representation == "context" \
                else self.protein.embed(part)
            chunks.append(genes.double().cpu().numpy())
        return np.concatenate(chunks)

    def on_test_epoch_end(self) -> None:
        data = self.trainer.datamodule
        parts = {split: data.split(split) for split in ("train", "test")}
        emb = {split: self.gene_embeddings(part["x"]) for split, part in parts.items()}
        genes = {}
        for split, part in parts.items():
            count = self.probe_genomes if split == "train" else len(part["function"])
            function = part["function"][:count].numpy().reshape(-1)
            keep = function >= 0
            genes[split] = (emb[split][:count].reshape(len(function), -1)[keep], function[keep])
        self.log("test/gene_function_accuracy", probe_scores(genes["train"], genes["test"], self.probe_c)["accuracy"])
        if self.context is None:
            genome = {split: (emb[split].mean(1), part["y"].numpy()) for split, part in parts.items()}
            scores = probe_scores(genome["train"], genome["test"], self.probe_c)
        else:
            scores = self.head_scores(parts["test"])
        self.log("test/phenotype_accuracy", scores["accuracy"])
        if "auroc" in scores:
            self.log("test/phenotype_auroc", scores["auroc"])

    @torch.no_grad()
    def head_scores(self, test: dict[str, torch.Tensor]) -> dict[str, float]:
        """Accuracy and (two classes) AUROC of the context model's own genome-level head."""
        from sklearn.metrics import roc_auc_score

        logits = torch.cat([self.context(self.embedded(part.to(self.device))) for part in test["x"].split(64)])
        y = test["y"].numpy()
        scores = {"accuracy": float((logits.argmax(1).cpu().numpy() == y).mean())}
        if logits.shape[1] == 2:
            scores["auroc"] = float(roc_auc_score(y, torch.softmax(logits, 1)[:, 1].cpu().numpy()))
        return scores
