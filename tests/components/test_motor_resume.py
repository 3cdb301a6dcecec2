"""A run trained by backpropagation through the plant, killed mid-training (SIGKILL), resumes to
the same numbers: the controller and optimizer are in the resume checkpoint, the loader's position
too, and each training batch is drawn from a generator seeded by (data.seed, batch index), so the
resumed run draws the batches the killed one would have (the plant holds no state across batches:
every rollout resets it). specs/motor_adapters/tiny_adapters.yaml with 12 steps, killed before step 8."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.resume import resume
from framework.runner import run

pytest.importorskip("gymnasium")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/framework"))
from test_resume import KILL_AT  # noqa: E402  (kills `exp run` at a step; one copy, shared)
SPEC = ROOT / "specs/motor_adapters/tiny_adapters.yaml"
OVERRIDES = ["data.iterations=12", "trainer.log_every_n_steps=1"]



def _history(client: MlflowClient, run_id: str) -> dict[str, list[tuple[int, float]]]:
    keys = [k for k in client.get_run(run_id).data.metrics if not k.startswith("system/")]
    return {k: sorted((m.step, m.value) for m in client.get_metric_history(run_id, k)) for k in keys}


def test_plant_bptt_run_killed_mid_training_resumes_to_the_same_numbers(tracked: str, tmp_path: Path) -> None:
    client = MlflowClient(tracked)
    reference = run(SPEC, OVERRIDES)
    runs = tmp_path / "runs"
    before = set(runs.glob("*/*"))
    done = subprocess.run([sys.executable, "-c", KILL_AT.format(step=7), "run", str(SPEC), *OVERRIDES],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EXPSPEC_METRICS_FLUSH_SECONDS": "0", "EXPSPEC_RESUME_MIN_SECONDS": "0"})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    (folder,) = set(runs.glob("*/*")) - before
    run_id = folder.name
    killed = _history(client, run_id)
    assert max(s for s, _ in killed["train/loss"]) >= 6  # it trained past a checkpoint
    assert not any(k.startswith("test/") for k in killed)
    resumed = resume(run_id)
    assert client.get_run(run_id).info.status == "FINISHED"
    tests = {k: v for k, v in reference.metrics.items() if k.startswith("test/")}
    assert tests and {k: resumed.metrics[k] for k in tests} == tests
    expected, got = _history(client, reference.run_id), _history(client, run_id)
    assert got == expected  # every step's metrics once, same values, none shifted
    assert len(expected["train/loss"]) == 12
