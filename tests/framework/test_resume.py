"""exp resume / exp rerun: a run killed with SIGKILL continues from its last checkpoint into the
same MLflow run, and ends with the metrics of an uninterrupted run with the same seed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.runner import rerun, resume, run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"
EPOCHS = ["trainer.max_steps=-1", "trainer.max_epochs=25", "trainer.limit_val_batches=2"]


def _kill_after_checkpoint(runs: Path, min_epoch: int, exclude: tuple[str, ...] = (), timeout: float = 240.0,
                           sig: int = signal.SIGKILL) -> str:
    """Start `exp run` in a subprocess, signal it once an epoch >= min_epoch is checkpointed."""
    # SIGINT back to its default in the child: under a shell's background job (`.ci/run &`) it is
    # inherited as ignored, and Python then never turns Ctrl-C into KeyboardInterrupt.
    process = subprocess.Popen([sys.executable, "-m", "framework.cli", "run", str(TINY), *EPOCHS],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for ckpt in runs.glob("*/*/checkpoints/epoch=*.ckpt"):
                epoch = int(ckpt.name.split("=")[1].split("-")[0])
                if epoch >= min_epoch and ckpt.parent.parent.name not in exclude:
                    time.sleep(0.05)  # let the write finish
                    process.send_signal(sig)
                    process.wait()
                    return ckpt.parent.parent.name
            if process.poll() is not None:
                pytest.fail(f"the run ended (exit {process.returncode}) before epoch {min_epoch} was checkpointed")
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            process.kill()
    pytest.fail("no checkpoint appeared")


def test_killed_run_resumes_to_the_uninterrupted_result(tracked: str, tmp_path: Path) -> None:
    reference = run(TINY, EPOCHS)
    run_id = _kill_after_checkpoint(tmp_path / "runs", min_epoch=3, exclude=(reference.run_id,))
    client = MlflowClient(tracked)
    assert client.get_run(run_id).info.status == "RUNNING"  # SIGKILL leaves no chance to say more
    resumed = resume(run_id)
    assert resumed.run_id == run_id
    assert client.get_run(run_id).info.status == "FINISHED"
    assert client.get_run(run_id).data.tags["expspec.resumed"] == "true"
    tests = {k: v for k, v in reference.metrics.items() if k.startswith("test/")}
    assert tests and {k: resumed.metrics[k] for k in tests} == pytest.approx(tests, rel=1e-6, abs=1e-7)


def test_resume_without_checkpoint_says_how_to_start_again(tracked: str) -> None:
    done = run(TINY, ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"])
    for ckpt in Path(os.environ["EXPSPEC_RUNS_DIR"]).glob(f"*/{done.run_id}/checkpoints/*.ckpt"):
        ckpt.unlink()
    with pytest.raises(FileNotFoundError, match=f"start it again with `exp rerun {done.run_id}`"):
        resume(done.run_id)


def test_rerun_repeats_the_stored_spec(tracked: str) -> None:
    short = ["trainer.max_steps=5", "trainer.limit_val_batches=1", "trainer.limit_test_batches=2"]
    first = run(TINY, short)
    again = rerun(first.run_id)
    assert again.run_id != first.run_id
    assert again.spec_hash == first.spec_hash
    assert again.metrics == first.metrics
    assert MlflowClient(tracked).get_run(again.run_id).data.tags["expspec.rerun_of"] == first.run_id


def test_ctrl_c_and_sigterm_mark_the_run_killed(tracked: str, tmp_path: Path) -> None:
    client = MlflowClient(tracked)
    for sig in (signal.SIGINT, signal.SIGTERM):
        run_id = _kill_after_checkpoint(tmp_path / "runs", min_epoch=1, sig=sig,
                                        exclude=tuple(p.parent.name for p in (tmp_path / "runs").glob("*/*/checkpoints")))
        assert client.get_run(run_id).info.status == "KILLED", signal.Signals(sig).name


def test_next_run_marks_a_sigkilled_run_killed(tracked: str, tmp_path: Path) -> None:
    """SIGKILL (or the out-of-memory killer) leaves a run RUNNING; the next run started in the same
    experiment on this host sees its process is gone and marks it KILLED, and it can still resume."""
    orphan = _kill_after_checkpoint(tmp_path / "runs", min_epoch=1)
    client = MlflowClient(tracked)
    assert client.get_run(orphan).info.status == "RUNNING"
    live = run(TINY, ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"])
    assert client.get_run(live.run_id).info.status == "FINISHED"
    reaped = client.get_run(orphan)
    assert reaped.info.status == "KILLED" and reaped.info.end_time is not None
    assert f"exp resume {orphan}" in reaped.data.tags["expspec.error"]
    assert resume(orphan).run_id == orphan
    assert client.get_run(orphan).info.status == "FINISHED"
