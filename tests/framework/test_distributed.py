"""DDP through a spec (CPU, gloo): two processes train, rank zero alone logs, to one MLflow run;
and four runs writing into one sqlite store at once all land complete."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "specs/cvm_fairness/tiny.yaml")
SHORT = ["trainer.max_steps=6", "trainer.limit_val_batches=2", "trainer.limit_test_batches=2",
         "trainer.log_every_n_steps=1"]


def _exp(args: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "framework.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ), **kwargs)


def _runs(client: MlflowClient, paper: str) -> list:
    experiment = client.get_experiment_by_name(paper)
    return client.search_runs([experiment.experiment_id]) if experiment else []


def test_ddp_on_cpu_logs_once_to_one_run(tracked: str) -> None:
    client = MlflowClient(tracked)
    before = {r.info.run_id for r in _runs(client, "cvm_fairness")}
    process = _exp(["run", TINY, "hardware.devices=2", "hardware.strategy=ddp", "hardware.accelerator=cpu",
                    "name=ddp-test", *SHORT])
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output
    new = [r for r in _runs(client, "cvm_fairness") if r.info.run_id not in before]
    assert len(new) == 1, f"expected one run, got {len(new)}"
    run = new[0]
    assert run.info.status == "FINISHED" and run.data.params["hardware.strategy"] == "ddp"
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
    assert steps and len(steps) == len(set(steps)), "a step was logged by more than one rank"
    assert 0.0 <= run.data.metrics["test/accuracy"] <= 1.0


def test_four_parallel_runs_into_one_sqlite_store(tracked: str) -> None:
    client = MlflowClient(tracked)
    names = [f"parallel-{i}" for i in range(4)]
    processes = [_exp(["run", TINY, f"name={name}", f"seed={i}", *SHORT]) for i, name in enumerate(names)]
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0] * 4, "\n".join(outputs)
    runs = {r.data.tags["expspec.name"]: r for r in _runs(client, "cvm_fairness") if r.data.tags.get("expspec.name") in names}
    assert sorted(runs) == names
    for run in runs.values():
        assert run.info.status == "FINISHED"
        assert "test/accuracy" in run.data.metrics and "optimizer.lr" in run.data.params
        assert len(client.get_metric_history(run.info.run_id, "train/loss")) == 6
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"resolved_spec.yaml", "environment", "result"} <= artifacts  # git/ too in a dirty tree


def test_four_first_runs_on_a_store_that_does_not_exist_yet(tracked: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Four `exp run` started at once on a fresh sqlite store: one creates and migrates it under a
    lock, the others wait and find it ready (without the lock MLflow's migrations race and leave
    the store half-migrated)."""
    store = f"sqlite:///{tmp_path / 'fresh' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    names = [f"first-{i}" for i in range(4)]
    processes = [_exp(["run", TINY, f"name={name}", f"seed={i}", *SHORT]) for i, name in enumerate(names)]
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0] * 4, "\n".join(outputs)
    client = MlflowClient(store)
    runs = {r.data.tags["expspec.name"]: r for r in _runs(client, "cvm_fairness")}
    assert sorted(runs) == names and all(r.info.status == "FINISHED" for r in runs.values())
