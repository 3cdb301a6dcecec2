"""hybrid_mup's specs: the paper-scale hybrid stops at once without its token file and runs (shrunk)
with one; the coordinate-check spec logs the change of every mixer and of the logits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from framework.runner import run

HYBRID_MUP = Path(__file__).resolve().parents[2] / "specs/hybrid_mup"
SHRINK = ["model.d_model=32", "model.n_layers=2", "model.mixers.0.head_dim=16", "model.mixers.0.d_state=4",
          "model.mixers.1.n_heads=4", "model.parametrization.base_width=16", "model.max_len=16", "data.seq_len=16",
          "data.batch_size=2", "data.val_fraction=0.1", "data.test_fraction=0.1", "hardware.accelerator=cpu",
          "hardware.precision=32-true", "scheduler.warmup_steps=1", "trainer.max_steps=3",
          "trainer.val_check_interval=3", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]


def test_pretraining_without_tokens_stops_at_start(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_TOKENS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_file: token ids not found \(\$EXPSPEC_TOKENS = \(unset\)\)"
                                                r".* Nothing is downloaded"):
        run(HYBRID_MUP / "lm_pretrain_mup.yaml", SHRINK)


def test_pretraining_runs_on_a_local_token_file(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tmp_path / "tokens.bin"
    np.random.default_rng(0).integers(0, 50304, size=2000).astype(np.uint16).tofile(tokens)
    monkeypatch.setenv("EXPSPEC_TOKENS", str(tokens))
    result = run(HYBRID_MUP / "lm_pretrain_mup.yaml", SHRINK)
    assert 14 < result.metrics["test/bits_per_token"] < 17   # ~log2(50304) = 15.6 for random ids


def test_coordinate_check_logs_each_mixer_and_the_logits(tracked: str) -> None:
    result = run(HYBRID_MUP / "coord_check_mup.yaml", ["sweep=null", "model.d_model=64", "model.mixers.1.n_heads=8"])
    logged = {k: v for k, v in result.metrics.items() if k.startswith("coord/")}
    assert sorted(logged) == ["coord/delta_rms.blocks.0.mixer", "coord/delta_rms.blocks.1.mixer",
                              "coord/delta_rms.logits"]
    assert all(v > 0 for v in logged.values())
