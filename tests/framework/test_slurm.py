"""framework/slurm.py through submitit's local executor: the sweep is submitted as a job array and
the command returns at once; a task pre-empted mid-trial (submitit's SIGUSR2) is requeued and
continues its own MLflow run; the last task ends the parent.

Needs submitit: skips saying so, and fails under EXPSPEC_CI=1 (`.ci/run` installs it)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]


def test_a_preempted_task_is_requeued_into_its_own_run(tracked: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import submitit  # noqa: F401
    except ImportError:
        if os.environ.get("EXPSPEC_CI") == "1":
            pytest.fail("EXPSPEC_CI=1 (.ci/run) but submitit is not installed")
        pytest.skip("submitit is not installed (pip install -e '.[distributed]')")
    from framework.slurm import JOB_TAG, submit_sweep

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("EXPSPEC_RESUME_MIN_SECONDS", "0")  # a resume checkpoint every twentieth of the run
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: slurm-test\npaper: slurm_test\n"
                    "trainer: {max_steps: 60, limit_val_batches: 1, limit_test_batches: 1}\n"
                    "sweep:\n  grid: {loss.terms.cvm.weight: [0.0, 2.0]}\n")
    lines: list[str] = []
    started = time.monotonic()
    jobs = submit_sweep(spec, [], "submitit-local", {"timeout_min": 10}, echo=lines.append)
    assert len(jobs) == 2 and time.monotonic() - started < 120  # submitted, not waited for
    assert not any(job.done() for job in jobs)
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("slurm_test").experiment_id
    first = None
    deadline = time.monotonic() + 300
    while first is None and time.monotonic() < deadline:  # the first task's run, once it has a checkpoint
        runs = client.search_runs([experiment], f"tags.`{JOB_TAG}` = '{jobs[0].job_id}'")
        if runs and list(Path(os.environ["EXPSPEC_RUNS_DIR"]).glob(f"*/{runs[0].info.run_id}/checkpoints/resume.ckpt")):
            first = runs[0]
        time.sleep(0.2)
    assert first is not None, jobs[0].stdout()
    os.kill(int(first.data.tags["expspec.pid"]), signal.SIGUSR2)  # SLURM's pre-emption warning
    results = [job.result() for job in jobs]
    runs = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{first.data.tags['mlflow.parentRunId']}'")
    assert sorted(r.data.params["loss.terms.cvm.weight"] for r in runs) == ["0.0", "2.0"]  # no second run
    resumed = client.get_run(first.info.run_id)
    assert resumed.info.status == "FINISHED" and resumed.data.tags.get("expspec.resumed") == "true"
    assert results[0]["run_id"] == first.info.run_id
    steps = [m.step for m in client.get_metric_history(first.info.run_id, "train/loss")]
    assert len(steps) == len(set(steps)) and max(steps) >= 59
    assert "requeue" in jobs[0].stderr().lower() or "requeue" in jobs[0].stdout().lower()
    parent = client.get_run(first.data.tags["mlflow.parentRunId"])
    assert parent.info.status == "FINISHED"
