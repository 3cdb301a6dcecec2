"""token_hallucination_detection: scores, threshold rule, losses and a run of each method."""

from __future__ import annotations

import math
from functools import partial

import lightning as L
import pytest
import torch

from components.data.facts import CorruptedFacts
from components.hallucination.task import (TokenHallucinationDetection, best_f1_threshold,
                                           emitted_token_probability, token_scores_report)
from components.sequence.attention import SoftmaxAttention
from components.sequence.lm import CausalLM


def tiny_lm(vocab_size: int = 30, max_len: int = 12) -> CausalLM:
    torch.manual_seed(0)
    return CausalLM(vocab_size, partial(SoftmaxAttention, n_heads=2), d_model=16, n_layers=1, max_len=max_len)


def test_threshold_maximizes_f1_and_report_is_the_hand_computed_one() -> None:
    scores = torch.tensor([0.1, 0.4, 0.35, 0.8])
    targets = torch.tensor([False, False, True, True])
    # >= 0.8: F1 2/3; >= 0.4: 1/2; >= 0.35: P 2/3, R 1, F1 0.8; >= 0.1: 2/3
    assert best_f1_threshold(scores, targets) == pytest.approx(0.35)
    report = token_scores_report(scores, targets, 0.35)
    assert report == pytest.approx({"token_auroc": 0.75, "token_f1": 0.8, "token_precision": 2 / 3, "token_recall": 1.0})
    assert best_f1_threshold(scores, torch.zeros(4, dtype=torch.bool)) == 0.5


def test_emitted_token_probability_reads_the_previous_positions_logits() -> None:
    logits = torch.randn(2, 5, 7)
    x = torch.randint(0, 7, (2, 5))
    probs = emitted_token_probability(logits, x)
    assert probs.shape == (2, 5) and (probs[:, 0] == 1).all()
    for b in range(2):
        for t in range(1, 5):
            assert probs[b, t] == pytest.approx(float(torch.softmax(logits[b, t - 1], -1)[x[b, t]]), abs=1e-7)


def test_token_loss_weights_hallucinated_tokens_and_skips_unscored_ones() -> None:
    task = TokenHallucinationDetection(tiny_lm(), method="token", positive_weight=3.0)
    batch = {"labels": torch.tensor([[0.0, 1.0, 0.0, 0.0]]), "mask": torch.tensor([[0, 1, 1, 1]])}
    # logits 0: every scored token costs log 2, weights 3, 1, 1 over 3 scored tokens
    assert float(task.loss(torch.zeros(1, 4), batch)) == pytest.approx(5 / 3 * math.log(2))


def test_response_scores_are_one_per_answer_and_read_its_last_answer_token() -> None:
    task = TokenHallucinationDetection(tiny_lm(), method="response").eval()
    x = torch.randint(0, 30, (3, 8))
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1, 0]])
    logits, scores = task.logits_and_scores({"x": x, "mask": mask})
    assert logits.shape == (3,) and scores.shape == (3, 8)
    assert torch.equal(scores, torch.sigmoid(logits)[:, None].expand(3, 8))
    changed = x.clone()
    changed[1, 5:] = (changed[1, 5:] + 1) % 30  # after answer 1's last token: its score is unchanged
    assert torch.allclose(task.logits_and_scores({"x": changed, "mask": mask})[0][1], logits[1])


def test_confidence_trains_nothing_and_scores_one_minus_the_emitted_probability() -> None:
    lm = tiny_lm()
    task = TokenHallucinationDetection(lm, method="confidence")
    assert task.head is None and not any(p.requires_grad for p in task.parameters())
    x = torch.randint(0, 30, (2, 6))
    _, scores = task.logits_and_scores({"x": x, "mask": torch.ones(2, 6)})
    assert torch.allclose(scores, 1 - emitted_token_probability(lm(x), x))
    with pytest.raises(RuntimeError, match=r"method 'confidence' has nothing to train"):
        task.configure_optimizers()


def test_frozen_backbone_trains_the_head_only() -> None:
    task = TokenHallucinationDetection(tiny_lm(), method="token", train_backbone=False)
    trained = [name for name, p in task.named_parameters() if p.requires_grad]
    assert trained == ["head.weight", "head.bias"]


def test_methods_run_and_test_f1_uses_the_threshold_chosen_on_validation(tmp_path) -> None:
    data = CorruptedFacts(num_entities=4, num_relations=2, num_values=3, value_len=2, num_connectives=2,
                          num_train=64, num_val=32, num_test=32, batch_size=16)
    data.setup()
    vocab, seq_len = data.info()["vocab_size"], data.info()["seq_len"]
    trainer = partial(L.Trainer, accelerator="cpu", logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)
    for method in ("token", "response"):
        task = TokenHallucinationDetection(tiny_lm(vocab, seq_len), partial(torch.optim.AdamW, lr=1e-3), method=method)
        fit = trainer(max_epochs=1)  # 4 steps, then validation
        fit.fit(task, datamodule=data)
        assert 0 <= float(fit.callback_metrics["val/token_auroc"]) <= 1
        fit.test(task, datamodule=data, verbose=False)
        assert float(fit.callback_metrics["test/threshold"]) == pytest.approx(task.test_threshold)
    task = TokenHallucinationDetection(tiny_lm(vocab, seq_len), method="confidence")
    tester = trainer()
    tester.test(task, datamodule=data, verbose=False)
    val_scores = torch.cat([1 - emitted_token_probability(task.model(b["x"]), b["x"])[b["mask"].bool()]
                            for b in data.val_dataloader()])
    val_targets = torch.cat([b["labels"][b["mask"].bool()] > 0.5 for b in data.val_dataloader()])
    assert task.test_threshold == pytest.approx(best_f1_threshold(val_scores, val_targets))
    assert set(tester.callback_metrics) >= {"test/token_f1", "test/token_auroc", "test/threshold"}


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=r"method must be one of token, response, confidence, got 'span'"):
        TokenHallucinationDetection(tiny_lm(), method="span")
    with pytest.raises(ValueError, match=r"the model must provide hidden_states\(x\)"):
        TokenHallucinationDetection(torch.nn.Linear(2, 2))
