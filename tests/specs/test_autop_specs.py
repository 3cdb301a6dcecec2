"""autop's paper-scale LM spec: without the token file it stops at once, naming the variable; with
one it runs (shrunk here to a tiny model) and trains under the derived parametrization."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from framework.runner import run

AUTOP = Path(__file__).resolve().parents[2] / "specs/autop"
SHRINK = ["model.model.d_model=32", "model.model.n_layers=1", "model.model.mixer.n_heads=2", "model.model.max_len=16",
          "model.base.d_model=16", "model.base.n_layers=1", "model.base.mixer.n_heads=1", "model.base.max_len=16",
          "data.seq_len=16", "data.batch_size=2", "data.val_fraction=0.1", "data.test_fraction=0.1",
          "hardware.accelerator=cpu", "hardware.precision=32-true", "scheduler.warmup_steps=1", "trainer.max_steps=2",
          "trainer.val_check_interval=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]


def test_lm_transfer_without_tokens_stops_at_start(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_TOKENS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_file: token ids not found \(\$EXPSPEC_TOKENS = \(unset\)\)"
                                                r".* Nothing is downloaded"):
        run(AUTOP / "lm_width_transfer.yaml", SHRINK)


def test_lm_transfer_runs_on_a_local_token_file(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tmp_path / "tokens.bin"
    np.random.default_rng(0).integers(0, 50304, size=2000).astype(np.uint16).tofile(tokens)
    monkeypatch.setenv("EXPSPEC_TOKENS", str(tokens))
    result = run(AUTOP / "lm_width_transfer.yaml", SHRINK)
    assert 14 < result.metrics["test/bits_per_token"] < 17   # ~log2(50304) = 15.6 for random ids
