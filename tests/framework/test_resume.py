"""exp resume / exp rerun: a run killed with SIGKILL at any point continues from its resume
checkpoint into the same MLflow run, and ends with the metrics and the metric history of an
uninterrupted run with the same seed: every (metric, step) once, none shifted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from framework.resume import rerun, resume
from framework.runner import run
from kill_resume import killed_at, metric_history, resumed_as_uninterrupted

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"
EPOCHS = ["trainer.max_steps=-1", "trainer.max_epochs=25", "trainer.limit_val_batches=2"]


def _checkpoint_position(runs: Path, run_id: str) -> tuple[int, int]:
    """(optimizer steps, batches of the current epoch) where the run's resume checkpoint was written."""
    (path,) = runs.glob(f"*/{run_id}/checkpoints/resume.ckpt")
    state = torch.load(path, map_location="cpu", weights_only=False)
    (loader,) = state["loops"]["fit_loop"]["state_dict"]["combined_loader"]
    return state["global_step"], loader["batches"]


def _check_exact_resume(tracked: str, runs: Path, overrides: list[str], kill_at: int | None) -> dict:
    """Run uninterrupted; run again killed at `kill_at` steps (None: while testing); resume;
    compare. The reference's metric history, for further checks."""
    client = MlflowClient(tracked)
    reference = run(TINY, overrides)
    run_id = killed_at(TINY, kill_at, overrides, runs)
    assert client.get_run(run_id).info.status == "RUNNING"  # SIGKILL leaves no chance to say more
    step, batches = _checkpoint_position(runs, run_id)
    killed = metric_history(client, run_id)
    if kill_at is not None:
        # the kill is mid-epoch, after the checkpoint, and steps after the checkpoint were logged
        assert step < kill_at and 0 < batches < 17  # 17 batches an epoch
        assert max(s for s, _ in killed["train/loss"]) > step
    else:
        assert not any(key.startswith("test/") for key in killed)
    expected = resumed_as_uninterrupted(client, reference, run_id)
    assert client.get_run(run_id).data.tags["expspec.resumed"] == "true"
    return expected


def test_tiny_spec_as_written_resumes_exactly_after_sigkill_mid_epoch(tracked: str, tmp_path: Path) -> None:
    """specs/cvm_fairness/tiny.yaml stops by max_steps (300): killed at step 80, mid-epoch (17
    batches an epoch), it resumes from the checkpoint at step 75 and ends at step 300."""
    expected = _check_exact_resume(tracked, tmp_path / "runs", [], kill_at=80)
    assert expected["test/accuracy"][0][0] == 300 and expected["train/loss"][-1][0] == 299


@pytest.mark.parametrize("min_seconds, writes", [("0", range(7, 100)), ("3600", range(1, 2))])
def test_resume_checkpoint_writes_at_most_every_min_seconds(tracked: str, monkeypatch: pytest.MonkeyPatch,
                                                            min_seconds: str, writes: range) -> None:
    """Six short epochs: with no time floor a write at every epoch end (and every twentieth of the
    steps); with an hour's floor, only the write at the end of fit, which is always made."""
    import lightning as L

    monkeypatch.setenv("EXPSPEC_RESUME_MIN_SECONDS", min_seconds)
    count = []
    save = L.Trainer.save_checkpoint
    monkeypatch.setattr(L.Trainer, "save_checkpoint", lambda self, *a, **k: count.append(1) or save(self, *a, **k))
    run(TINY, ["trainer.max_steps=-1", "trainer.max_epochs=6", "trainer.limit_val_batches=1"])
    assert len(count) in writes


def test_user_checkpoint_callback_does_not_change_where_resume_starts(tracked: str, tmp_path: Path) -> None:
    """A user's checkpoint of the best val/loss epoch: resume still starts from the last state."""
    best = ["callbacks=[{type: checkpoint, monitor: val/loss, save_top_k: 1}]", "trainer.max_steps=120"]
    _check_exact_resume(tracked, tmp_path / "runs", best, kill_at=100)
    assert len(list((tmp_path / "runs").glob("*/*/checkpoints/epoch=*.ckpt"))) == 2  # its files are still written


def test_max_epochs_with_dropout_resumes_exactly(tracked: str, tmp_path: Path) -> None:
    """Stopping by epochs; dropout draws from torch's generator, restored with the checkpoint."""
    epochs = ["trainer.max_steps=-1", "trainer.max_epochs=6", "model.dropout=0.3"]
    _check_exact_resume(tracked, tmp_path / "runs", epochs, kill_at=80)


@pytest.mark.parametrize("kill_at", [pytest.param(30, marks=pytest.mark.slow), None], ids=["training", "testing"])
def test_early_stopping_resumes_exactly(tracked: str, tmp_path: Path, kill_at: int | None) -> None:
    """Early stopping's patience count is in the checkpoint; a run killed after it stopped
    training (while testing) does not train again (Lightning does not store `should_stop`)."""
    stopping = ["callbacks=[{type: early_stopping, monitor: val/accuracy, mode: max, patience: 1}]",
                "trainer.max_steps=-1", "trainer.max_epochs=30", "optimizer.lr=0.05"]
    expected = _check_exact_resume(tracked, tmp_path / "runs", stopping, kill_at=kill_at)
    assert len(expected["val/accuracy"]) < 30  # it stopped early: fewer validations than max_epochs


def _signal_after_checkpoint(runs: Path, exclude: tuple[str, ...] = (), timeout: float = 240.0,
                             sig: int = signal.SIGKILL) -> str:
    """Start `exp run` in a subprocess, signal it once it has written its resume checkpoint."""
    # SIGINT back to its default in the child: under a shell's background job (`.ci/run &`) it is
    # inherited as ignored, and Python then never turns Ctrl-C into KeyboardInterrupt.
    log = runs.parent / f"signal-{int(sig)}-{time.monotonic_ns()}.log"  # what it printed, for a failure's message
    with log.open("w") as printed:
        process = subprocess.Popen([sys.executable, "-m", "framework.cli", "run", str(TINY), *EPOCHS],
                                   stdout=subprocess.DEVNULL, stderr=printed, env=dict(os.environ),
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for ckpt in runs.glob("*/*/checkpoints/resume.ckpt"):
                if ckpt.parent.parent.name not in exclude:
                    process.send_signal(sig)
                    process.wait()
                    return ckpt.parent.parent.name
            if process.poll() is not None:
                pytest.fail(f"the run ended (exit {process.returncode}) before it wrote a checkpoint")
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            process.kill()
    pytest.fail("no checkpoint appeared")


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


def test_rerun_into_a_named_store_leaves_the_process_environment_alone(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`exp rerun --tracking-uri` works in that store while it runs (framework/invocation.py) and
    changes nothing after it: no MLFLOW_TRACKING_URI, no EXPSPEC_RERUN_OF left in os.environ."""
    from framework.tracking import tracking_uri

    first = run(TINY, ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"])
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.chdir(tmp_path)  # the default store, were it used by mistake, lands here
    before = {k: v for k, v in os.environ.items() if k.startswith(("MLFLOW_", "EXPSPEC_"))}
    again = rerun(first.run_id, tracked)
    assert {k: v for k, v in os.environ.items() if k.startswith(("MLFLOW_", "EXPSPEC_"))} == before
    assert tracking_uri() == "sqlite:///mlflow.db"
    assert MlflowClient(tracked).get_run(again.run_id).data.tags["expspec.rerun_of"] == first.run_id
    assert not (tmp_path / "mlflow.db").exists()


def test_ctrl_c_and_sigterm_mark_the_run_killed(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first resume checkpoint is written early in training (not 10 s after it started, when
    # this short run may be testing or uploading already, as on a loaded CI machine), so each
    # signal lands mid-training. Where else it may land is test_an_interrupt_after_training...
    monkeypatch.setenv("EXPSPEC_RESUME_MIN_SECONDS", "0")
    client = MlflowClient(tracked)
    for sig in (signal.SIGINT, signal.SIGTERM):
        run_id = _signal_after_checkpoint(tmp_path / "runs", sig=sig,
                                          exclude=tuple(p.parent.name for p in (tmp_path / "runs").glob("*/*/checkpoints")))
        ended = client.get_run(run_id)
        printed = "\n".join(p.read_text()[-3000:] for p in tmp_path.glob(f"signal-{int(sig)}-*.log"))
        assert ended.info.status == "KILLED", (signal.Signals(sig).name, ended.data.tags.get("expspec.error"), printed)


@pytest.mark.parametrize("where", ["framework.runner.upload_result", "framework.runner.announce"])
def test_an_interrupt_after_training_or_before_it_marks_the_run_killed(
        tracked: str, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Ctrl-C or SIGTERM (which framework.cli turns into KeyboardInterrupt) while the result is
    uploaded after training, or while the run is announced before it: the run ends KILLED with the
    error, never left RUNNING (as it was before: these steps ran after the runner's error handling)."""
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("terminated by signal 15")

    monkeypatch.setattr(where, interrupted)
    client = MlflowClient(tracked)
    with pytest.raises(KeyboardInterrupt):
        run(TINY, ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1",
                   f"name=interrupted-in-{where.rsplit('.', 1)[1]}"])
    (latest,) = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   f"tags.`expspec.name` = 'interrupted-in-{where.rsplit('.', 1)[1]}'")
    assert latest.info.status == "KILLED"
    assert latest.data.tags["expspec.error"] == "KeyboardInterrupt: terminated by signal 15"


def test_next_run_marks_a_sigkilled_run_killed(tracked: str, tmp_path: Path) -> None:
    """SIGKILL (or the out-of-memory killer) leaves a run RUNNING; the next run started in the same
    experiment on this host sees its process is gone and marks it KILLED, and it can still resume."""
    orphan = _signal_after_checkpoint(tmp_path / "runs")
    client = MlflowClient(tracked)
    assert client.get_run(orphan).info.status == "RUNNING"
    live = run(TINY, ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"])
    assert client.get_run(live.run_id).info.status == "FINISHED"
    reaped = client.get_run(orphan)
    assert reaped.info.status == "KILLED" and reaped.info.end_time is not None
    assert f"exp resume {orphan}" in reaped.data.tags["expspec.error"]
    assert resume(orphan).run_id == orphan
    assert client.get_run(orphan).info.status == "FINISHED"
