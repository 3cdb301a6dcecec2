"""LoTTS tiny-scale ingredients: digits with known defects, the tiny verifier's ranking, and the
generic diffusion-training task (the loss it optimizes goes down)."""

import lightning as L
import numpy as np
import pytest
import torch

pytest.importorskip("diffusers")

from components.diffusion.digit_defects import DigitDefects  # noqa: E402
from components.diffusion.tiny import DEFECT_SIZE, HIGH, LOW, TinyTokenUNet, inject_defects  # noqa: E402
from components.diffusion.verifiers import TinyDigitVerifier  # noqa: E402
from components.diffusion.task import DiffusionTraining  # noqa: E402


def test_digit_defects_masks_match_quality_tokens():
    arrays = DigitDefects(defect_fraction=0.5, copies=1).load()
    x, cond, masks = arrays["x"], arrays["cond"], arrays["defect_mask"]
    assert x.shape == (1797, 1, 8, 8) and x.min() >= -1.0 and x.max() <= 1.0
    defective = cond[:, 1] == LOW
    assert set(np.unique(cond[:, 1])) == {HIGH, LOW}
    assert 0.4 < defective.mean() < 0.6
    assert (masks[defective].reshape(defective.sum(), -1).sum(1) == DEFECT_SIZE**2).all()
    assert masks[~defective].sum() == 0
    assert (cond[:, 0] == arrays["y"]).all()


def test_injected_defect_changes_only_its_patch():
    rng = np.random.default_rng(0)
    images = rng.random((50, 1, 8, 8)).astype(np.float32) * 0.5
    out, masks = inject_defects(images, rng)
    changed = np.abs(out - images) > 0
    assert not (changed & (masks == 0)).any()
    assert changed.reshape(50, -1).any(1).all()


def test_tiny_verifier_prefers_the_prompted_clean_digit():
    from sklearn import datasets

    verifier = TinyDigitVerifier()
    bunch = datasets.load_digits()
    clean = torch.as_tensor(bunch.images[:300, None] / 16.0, dtype=torch.float32)
    defective, _ = inject_defects(clean.numpy(), np.random.default_rng(123))
    right = [str(y) for y in bunch.target[:300]]
    wrong = [str((y + 1) % 10) for y in bunch.target[:300]]
    score_clean = verifier(clean, right)
    assert (score_clean > verifier(torch.as_tensor(defective), right)).float().mean() > 0.8
    assert (score_clean > verifier(clean, wrong)).float().mean() > 0.9


def test_diffusion_training_lowers_the_denoising_loss():
    torch.manual_seed(0)
    arrays = DigitDefects(copies=1).load()
    batch = {"x": torch.as_tensor(arrays["x"][:64]), "cond": torch.as_tensor(arrays["cond"][:64])}
    task = DiffusionTraining(TinyTokenUNet(block_out_channels=[16, 32]), lambda p: torch.optim.AdamW(p, lr=2e-3))

    def loss() -> float:
        torch.manual_seed(1)  # same t and noise each time
        with torch.no_grad():
            return float(task._loss(batch))

    before = loss()
    optimizer = task.optimizer_factory(task.parameters())
    for _ in range(60):
        optimizer.zero_grad()
        task._loss(batch).backward()
        optimizer.step()
    assert loss() < 0.6 * before


def test_diffusion_training_needs_a_noise_schedule():
    with pytest.raises(ValueError, match="noise_scheduler"):
        DiffusionTraining(torch.nn.Linear(2, 2), torch.optim.Adam)


def test_diffusion_training_logs_the_loss_per_stage():
    L.seed_everything(0, verbose=False)
    task = DiffusionTraining(TinyTokenUNet(block_out_channels=[16, 32]), lambda p: torch.optim.AdamW(p, lr=2e-3))
    trainer = L.Trainer(max_epochs=1, limit_train_batches=1, limit_val_batches=1, limit_test_batches=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, accelerator="cpu")
    data = DigitDefects(copies=1, batch_size=16)
    trainer.fit(task, datamodule=data)
    assert {"train/loss", "val/loss"} <= set(trainer.callback_metrics)
    trainer.test(task, datamodule=data, verbose=False)
    assert float(trainer.callback_metrics["test/loss"]) > 0


def test_the_tiny_verifier_is_the_same_whatever_threads_the_process_had() -> None:
    """It is trained once per process and kept: at the process's 2 threads its weights came out
    other in the last bits than at 1, and lotts' recorded scores (trials at 1 thread) moved by 0.1
    when another test had built it first (CI of 874bda6)."""
    import torch

    from components.diffusion import verifiers

    before, kept = torch.get_num_threads(), dict(verifiers._TRAINED)
    nets = []
    try:
        for threads in (1, 2):
            verifiers._TRAINED.clear()
            torch.set_num_threads(threads)
            nets.append(verifiers.TinyDigitVerifier(steps=40).net)
    finally:
        torch.set_num_threads(before)
        verifiers._TRAINED.clear()
        verifiers._TRAINED.update(kept)
    assert all(torch.equal(a, b) for a, b in zip(nets[0].parameters(), nets[1].parameters()))
