"""framework/sweep.py: trials as child runs of one parent, failures reported, resume by hash."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from framework.sweep import FAILED, FINISHED, SKIPPED, run_sweep

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["trainer.max_steps=3", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]


def _spec(tmp_path: Path, grid: str, kind: str = "grid") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: sweep-test\npaper: sweep_test\n"
                    f"sweep:\n  {kind}: {grid}\n")
    return path


def test_trials_are_children_and_rerun_skips_finished(tracked: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "{loss.terms.cvm.weight: [0.0, 5.0]}")
    lines: list[str] = []
    result = run_sweep(spec, SHORT, jobs=2, echo=lines.append)
    assert [o.status for o in result.outcomes] == [FINISHED, FINISHED]
    client = MlflowClient(tracked)
    children = [client.get_run(o.run_id) for o in result.outcomes]
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {result.parent_run_id}
    assert [c.data.tags["mlflow.runName"] for c in children] == ["sweep-test[weight=0.0]", "sweep-test[weight=5.0]"]
    assert [c.data.params["loss.terms.cvm.weight"] for c in children] == ["0.0", "5.0"]
    assert [c.data.params["hardware.threads"] for c in children] == ["1", "1"]  # the spec says 1 (and 2 cores / 2 jobs allow 1)
    assert client.get_run(result.parent_run_id).info.status == "FINISHED"

    again = run_sweep(spec, SHORT, jobs=2, echo=lines.append)
    assert [o.status for o in again.outcomes] == [SKIPPED, SKIPPED]
    assert again.parent_run_id == result.parent_run_id
    assert any(line.startswith("[skip] weight=0.0: already finished") for line in lines)


def test_failures_reported_and_summarized(tracked: str, tmp_path: Path) -> None:
    # in_features 5 passes validation but contradicts the data (6 features): the trial fails at build.
    spec = _spec(tmp_path, "{model.in_features: [6, 5]}")
    lines: list[str] = []
    result = run_sweep(spec, SHORT, jobs=1, echo=lines.append)
    assert [o.status for o in result.outcomes] == [FINISHED, FAILED]
    assert "is 5 but the data has in_features = 6" in result.outcomes[1].message
    assert any("in_features=5: FAILED" in line for line in lines)
    assert lines[-1].startswith("summary: 1 finished, 1 failed")
    assert MlflowClient(tracked).get_run(result.parent_run_id).info.status == "FAILED"


def test_fail_fast_launches_no_more(tracked: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "{model.in_features: [5, 6, 6], seed: [7, 8, 9]}", kind="zip")
    result = run_sweep(spec, SHORT, jobs=1, fail_fast=True, echo=lambda *_: None)
    assert [o.status for o in result.outcomes] == [FAILED, "NOT RUN", "NOT RUN"]


def test_trials_keep_the_spec_threads_whatever_the_jobs(tracked: str, tmp_path: Path) -> None:
    """A trial runs with the spec's hardware.threads (1), not the cores one job leaves free, so its
    numbers do not depend on --jobs; more threads than cores // jobs are capped."""
    spec = _spec(tmp_path, "{loss.terms.cvm.weight: [0.0]}")
    client = MlflowClient(tracked)
    # learning rates no other test of the session uses: a finished trial of the same hash is skipped
    for overrides, jobs, threads in ((["optimizer.lr=0.0011"], 1, "1"),
                                     (["hardware.threads=2", "optimizer.lr=0.0012"], 2, "1")):
        lines: list[str] = []
        result = run_sweep(spec, [*SHORT, *overrides], jobs=jobs, cores=2, echo=lines.append)
        assert f"{jobs} job(s) x {threads} thread(s)" in lines[0]
        [trial] = result.outcomes
        assert client.get_run(trial.run_id).data.params["hardware.threads"] == threads
