"""Token-level hallucination detection: score every answer token of a language model's text for
being hallucinated, and the baselines the detector is compared with.

Paper: TokenHD ("token-level hallucination detectors", NeurIPS 2026; specs/tokenhd/README.md): a
causal LM with a one-logit token-classification head, fine-tuned with per-token binary
cross-entropy on synthetic annotations; its released detectors are Qwen3ForTokenClassification
(num_labels = 1, a sigmoid per token).

The task's `model` is a causal LM that provides `hidden_states(x)` (the residual stream after the
embedding and after each block: `causal_lm`, `pretrained_causal_lm`) and forward(x) -> next-token
logits; its weights usually come from an earlier stage (`init: {stage: lm}`). `method` says how the
score s_t in [0, 1] of token t is made:

- `token` (TokenHD): s_t = sigmoid(w . h_t + b), h_t the hidden state `layer` at position t;
  trained with BCE on the token labels of the answer tokens (`mask`), hallucinated tokens weighted
  by `positive_weight`.
- `response` (baseline: a response-level classifier broadcast to tokens): one logit per answer,
  w . h_T + b at its last answer token T (which a causal LM has read the whole answer by, as
  Hugging Face's ...ForSequenceClassification), trained with BCE on whether the answer holds any
  hallucinated token; every answer token gets the answer's score.
- `confidence` (baseline: the LM's own token confidence): s_t = 1 - p(x_t | x_<t), the LM's
  probability of the token it emitted; nothing is trained (run it with `phases: [test]`).

With `train_backbone` the LM is fine-tuned with the head (as the paper), else frozen (a probe).

Batches: {"x": ids (B, L), "labels": (B, L) float in [0, 1] (soft labels allowed), "mask": (B, L)
answer tokens to score} (`corrupted_facts`, `token_label_file`). A token counts as hallucinated
when its label is > 0.5.

Logged, over the answer tokens of a whole split: `<split>/token_auroc`; `<split>/token_f1`,
`<split>/token_precision`, `<split>/token_recall` at the threshold `<split>/threshold`. The
threshold is the one that maximizes token F1 on the validation split: for val, its own; for test,
chosen on the validation split with the final model at the start of testing (so test F1 never
sees test labels). The scores are gathered on the process that scored them: with several
devices each would report its own share (every spec here uses one). Besides, `train/loss` per step
and `val/loss`, `test/loss` per epoch (not for `confidence`).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.functional.classification import (
    binary_auroc, binary_f1_score, binary_precision, binary_precision_recall_curve, binary_recall)

from components.tasks.language_modeling import LanguageModeling
from components.tasks.supervised import log_loss, optimizers_config
from components.types import PositiveFloat

METHODS = ("token", "response", "confidence")


def best_f1_threshold(scores: torch.Tensor, targets: torch.Tensor) -> float:
    """The score threshold t maximizing the F1 of `score >= t` against binary targets (exact over
    every distinct score: torchmetrics' precision-recall curve); 0.5 when there is no positive."""
    if not bool(targets.any()):
        return 0.5
    precision, recall, thresholds = binary_precision_recall_curve(scores, targets.long())
    f1 = 2 * precision * recall / (precision + recall).clamp_min(1e-12)
    return float(thresholds[int(f1[:-1].argmax())])  # the last point (recall 0) has no threshold


def token_scores_report(scores: torch.Tensor, targets: torch.Tensor, threshold: float) -> dict[str, float]:
    """token_auroc, and token_f1 / token_precision / token_recall of `score >= threshold`, over
    flat scores in [0, 1] and binary targets."""
    targets = targets.long()
    # torchmetrics thresholds with `>`; nudge so that a score equal to the threshold counts positive
    at = torch.nextafter(torch.tensor(threshold, dtype=scores.dtype), torch.tensor(-1.0, dtype=scores.dtype))
    at = float(at)
    return {
        "token_auroc": float(binary_auroc(scores, targets)),
        "token_f1": float(binary_f1_score(scores, targets, threshold=at)),
        "token_precision": float(binary_precision(scores, targets, threshold=at)),
        "token_recall": float(binary_recall(scores, targets, threshold=at)),
    }


def emitted_token_probability(logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """p(x_t | x_<t) for every position t >= 1 read from next-token logits (B, L, V); 1 at t = 0
    (the first token has no prediction). Shape (B, L)."""
    probs = torch.softmax(logits[:, :-1].float(), dim=-1).gather(-1, x[:, 1:, None])[..., 0]
    return torch.cat([torch.ones_like(probs[:, :1]), probs], dim=1)


def model_width(model: nn.Module) -> int:
    """The width of the model's hidden states: `d_model`, or a Hugging Face config's hidden_size."""
    width = getattr(model, "d_model", None)
    if width is None:
        raise ValueError(f"token_hallucination_detection needs a model with a d_model attribute and "
                         f"hidden_states(x) (causal_lm, pretrained_causal_lm), got {type(model).__name__}")
    return int(width)


class TokenHallucinationDetection(L.LightningModule):
    """Score each answer token for hallucination (module docstring).

    Args:
        model: The causal LM (runtime, from `model:`; weights usually from `init:`).
        optimizer: Factory called with the trained parameters (not used by `confidence`).
        scheduler: Factory called as scheduler(optimizer, total_steps), or None.
        method: `token` (the detector), `response` or `confidence` (the baselines).
        layer: Which hidden state the head reads (index into hidden_states(x): 0 the embedding,
            -1 the last block's output).
        train_backbone: Fine-tune the LM with the head; false freezes it (a linear probe).
        positive_weight: Weight of a hallucinated token (of a hallucinated answer for `response`)
            in the BCE: the importance weight of the rare class.
    """

    LOGGED_METRICS = ("train/loss", "val/loss", "test/loss", "{split}/token_auroc", "{split}/token_f1",
                      "{split}/token_precision", "{split}/token_recall", "{split}/threshold")

    check_data = staticmethod(LanguageModeling.check_data)

    def __init__(
        self,
        model: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
        method: Literal["token", "response", "confidence"] = "token",
        layer: int = -1,
        train_backbone: bool = True,
        positive_weight: PositiveFloat = 1.0,
    ) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        if not callable(getattr(model, "hidden_states", None)):
            raise ValueError(f"the model must provide hidden_states(x) (causal_lm, pretrained_causal_lm), "
                             f"got {type(model).__name__}")
        if positive_weight <= 0:
            raise ValueError(f"positive_weight must be > 0, got {positive_weight}")
        self.model, self.method, self.layer = model, method, layer
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.train_backbone, self.positive_weight = train_backbone and method != "confidence", positive_weight
        self.model.requires_grad_(self.train_backbone)
        self.head = nn.Linear(model_width(model), 1) if method != "confidence" else None
        self._collected: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self.test_threshold: float | None = None

    # -- scores -------------------------------------------------------------------------------

    def logits_and_scores(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor | None, torch.Tensor]:
        """(logits the loss reads: (B, L) per token or (B,) per answer, None for confidence;
        scores (B, L) in [0, 1], one per token)."""
        x, mask = batch["x"], batch["mask"].bool()
        if self.method == "confidence":
            return None, 1.0 - emitted_token_probability(self.model(x), x)
        h = self.model.hidden_states(x)[self.layer].float()
        if self.method == "token":
            logits = self.head(h)[..., 0]
            return logits, torch.sigmoid(logits)
        last = mask.shape[1] - 1 - mask.flip(1).int().argmax(1)  # each answer's last token
        logits = self.head(h[torch.arange(len(h), device=h.device), last])[..., 0]
        return logits, torch.sigmoid(logits)[:, None].expand_as(mask)

    def loss(self, logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Weighted BCE on the answer tokens (`token`) or on the answers (`response`)."""
        mask, labels = batch["mask"].bool(), batch["labels"].float()
        if self.method == "response":
            targets = (labels * mask).amax(1).gt(0.5).float()
            weights = 1 + (self.positive_weight - 1) * targets
            return F.binary_cross_entropy_with_logits(logits, targets, weight=weights)
        weights = mask.float() * (1 + (self.positive_weight - 1) * labels)
        per_token = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
        return (per_token * weights).sum() / mask.sum().clamp_min(1)

    # -- steps --------------------------------------------------------------------------------

    def train(self, mode: bool = True) -> "TokenHallucinationDetection":
        super().train(mode)
        if not self.train_backbone:
            self.model.eval()  # frozen: no dropout in the features a probe reads
        return self

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        logits, _ = self.logits_and_scores(batch)
        if logits is None:
            raise RuntimeError("method 'confidence' trains nothing: give the spec `phases: [test]`")
        loss = self.loss(logits, batch)
        log_loss(self, "train", loss, len(batch["x"]))
        return loss

    def _eval_step(self, batch: dict[str, torch.Tensor], split: str) -> None:
        logits, scores = self.logits_and_scores(batch)
        if logits is not None:
            log_loss(self, split, self.loss(logits, batch), len(batch["x"]))
        self._keep(split, scores, batch)

    def _keep(self, split: str, scores: torch.Tensor, batch: dict[str, torch.Tensor]) -> None:
        """Keep the scores and binary targets of the batch's answer tokens for the epoch's report."""
        mask = batch["mask"].bool()
        self._collected.setdefault(split, []).append((scores[mask].float().cpu(), batch["labels"][mask].gt(0.5).cpu()))

    def _collect(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        parts = self._collected.pop(split, [])
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch, "test")

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            self._collected.pop("val", None)
            return
        scores, targets = self._collect("val")
        self._log_report("val", scores, targets, best_f1_threshold(scores, targets))

    def on_test_start(self) -> None:
        """Choose the test threshold on the validation split with the final model."""
        with torch.no_grad():
            for batch in self.trainer.datamodule.val_dataloader():
                batch = {k: v.to(self.device) for k, v in batch.items()}
                self._keep("threshold", self.logits_and_scores(batch)[1], batch)
        self.test_threshold = best_f1_threshold(*self._collect("threshold"))

    def on_test_epoch_end(self) -> None:
        scores, targets = self._collect("test")
        self._log_report("test", scores, targets, self.test_threshold)

    def _log_report(self, split: str, scores: torch.Tensor, targets: torch.Tensor, threshold: float) -> None:
        for name, value in token_scores_report(scores, targets, threshold).items():
            self.log(f"{split}/{name}", value, prog_bar=name == "token_f1")
        self.log(f"{split}/threshold", threshold)

    def configure_optimizers(self) -> Any:
        if self.head is None or self.optimizer_factory is None:
            raise RuntimeError(f"method {self.method!r} has nothing to train or no optimizer: give `optimizer:`, "
                               "or `phases: [test]` for confidence")
        parameters = [p for p in self.parameters() if p.requires_grad]
        return optimizers_config(self, self.optimizer_factory, self.scheduler_factory, parameters)
