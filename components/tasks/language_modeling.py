"""Language modeling: next-token prediction over sequences, as classification at every position.

The model maps token ids (B, L) to logits (B, L, V); the task flattens positions into the batch,
so outputs (B*L, V) and batch["y"] (B*L,) reach the loss and metrics exactly as in
`classification` (`cross_entropy`, `accuracy`, ... apply unchanged), and are logged as there
(`Supervised.log_step`: loss, named loss terms, metrics); besides, `<split>/bits_per_token`
(cross-entropy in bits, whatever the loss) for val and test.

Split one of `sae_replay` (specs/sae_replay/): the tiny character LM whose activations the SAEs
are trained on.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from components.tasks.supervised import Supervised


class LanguageModeling(Supervised):
    """Next-token prediction: batches {"x": ids (B, L), "y": next ids (B, L)}; the model's
    `vocab_size` must equal the data's, and its `max_len` cover the data's `seq_len`.

    Args: as `classification` (model, loss, optimizer, scheduler, metrics, train_metrics,
    log_train_metrics).
    """

    @staticmethod
    def check_data(info: dict[str, int], model_args: dict[str, Any]) -> list[tuple[str, str]]:
        problems = []
        vocab, model_vocab = info.get("vocab_size"), model_args.get("vocab_size")
        if vocab is None:
            problems.append(("vocab_size", "the data reports no vocab_size (not a token data module)"))
        elif model_vocab is not None and model_vocab != vocab:
            problems.append(("vocab_size", f"is {model_vocab} but the data has vocab_size = {vocab}"))
        seq_len, max_len = info.get("seq_len"), model_args.get("max_len")
        if seq_len is not None and max_len is not None and max_len < seq_len:
            problems.append(("max_len", f"is {max_len} but the data has seq_len = {seq_len}"))
        return problems

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        logits = self.model(batch["x"])
        if logits.ndim != 3:
            raise ValueError(f"language_modeling: the model must return logits (B, L, V), got {tuple(logits.shape)}")
        flat = logits.reshape(-1, logits.shape[-1])
        flat_batch = {**batch, "y": batch["y"].reshape(-1)}
        loss = self.loss(flat, flat_batch)
        self.log_step(split, loss, flat, flat_batch)
        if split != "train":
            bits = F.cross_entropy(flat.detach(), flat_batch["y"]) / math.log(2)
            self.log(f"{split}/bits_per_token", bits, on_epoch=True, batch_size=len(batch["x"]), sync_dist=True)
        return loss
