"""gamma_laplace's paper-scale spec beyond "it validates": it reads Fashion-MNIST from local idx
files only (a clear error naming the paths when they are absent), and runs end to end on fake
files in the real format (a narrow CNN, a few images), logging the evidence curve over gamma."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from framework.runner import run

SPEC = Path(__file__).resolve().parents[2] / "specs/gamma_laplace/fashion_cnn.yaml"
# a narrow CNN (P = 2*9+2 + 3*2*9+3 + 3*10+10 = 117), one epoch, 2 rescalings: the whole path, quickly
SHORT = ["hardware.accelerator=cpu", "hardware.threads=1", "model.channels=[2, 3]", "data.batch_size=16",
         "stages.train.trainer.max_epochs=1", "stages.laplace.task.analysis.num_rescalings=2"]


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_fashion_cnn_without_the_files_names_them(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_FASHION_MNIST_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"Fashion-MNIST files not found .*EXPSPEC_FASHION_MNIST_DIR.*"
                                                r"dataset-fashion-mnist.*Nothing is downloaded"):
        run(SPEC, [*SHORT, f"data.root={tmp_path / 'absent'}"])


def test_fashion_cnn_runs_on_fake_files(tracked: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 60), ("t10k", 20)):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    metrics = run(SPEC, [*SHORT, f"data.root={tmp_path}"]).metrics
    assert all(math.isfinite(v) for v in metrics.values())
    assert {f"laplace:test/canonical_log_evidence_gamma{g:g}" for g in (-0.3, 0.0, 0.5, 1.3)} <= set(metrics)
    assert metrics["laplace:test/canonical_grid_evidence_spread"] < 1e-6
    assert metrics["laplace:test/evidence_spread"] > 1e-3  # the standard EB evidence moves with the rescaling
