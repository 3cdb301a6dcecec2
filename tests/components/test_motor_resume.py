"""A run trained by backpropagation through the plant, killed mid-training (SIGKILL), resumes to
the same numbers: the controller and optimizer are in the resume checkpoint, the loader's position
too, and each training batch is drawn from a generator seeded by (data.seed, batch index), so the
resumed run draws the batches the killed one would have (the plant holds no state across batches:
every rollout resets it). specs/motor_adapters/tiny_adapters.yaml with 12 steps, killed before step 8."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/framework"))
from kill_resume import kill_and_resume  # noqa: E402  (one copy of the kill, resume and compare)
SPEC = ROOT / "specs/motor_adapters/tiny_adapters.yaml"
OVERRIDES = ["data.iterations=12", "trainer.log_every_n_steps=1"]


def test_plant_bptt_run_killed_mid_training_resumes_to_the_same_numbers(tracked: str, tmp_path: Path) -> None:
    expected = kill_and_resume(tracked, SPEC, OVERRIDES, tmp_path / "runs", step=7, progress="train/loss")
    assert len(expected["train/loss"]) == 12  # every step's metrics, once
