"""llops' paper-scale LM specs: without the token file they stop at once, naming the variable;
with a token file they run (shrunk here to a tiny model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from framework.runner import run

LLOPS = Path(__file__).resolve().parents[2] / "specs/llops"
SHRINK = ["model.d_model=16", "model.n_layers=1", "model.mixer.n_heads=2", "model.max_len=32", "data.seq_len=32",
          "data.batch_size=2", "data.val_fraction=0.1", "data.test_fraction=0.1", "model.mixer.chunk_size=8",
          "model.mixer.feature_map.rank=2", "hardware.accelerator=cpu", "hardware.precision=32-true",
          "scheduler.warmup_steps=1", "trainer.max_steps=3", "trainer.val_check_interval=3",
          "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]


@pytest.mark.parametrize("spec", ["lm_pretrain_llops.yaml", "lm_pretrain_polysketch.yaml"])
def test_pretraining_without_tokens_stops_at_start(spec: str, tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_TOKENS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_file: token ids not found \(\$EXPSPEC_TOKENS = \(unset\)\)"
                                                r".* Nothing is downloaded"):
        run(LLOPS / spec, SHRINK)


def test_pretraining_runs_on_a_local_token_file(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = tmp_path / "tokens.bin"
    np.random.default_rng(0).integers(0, 50304, size=4000).astype(np.uint16).tofile(tokens)
    monkeypatch.setenv("EXPSPEC_TOKENS", str(tokens))
    result = run(LLOPS / "lm_pretrain_llops.yaml", SHRINK)
    assert 14 < result.metrics["test/bits_per_token"] < 17   # ~log2(50304) = 15.6 for random ids
