"""The tracking server as the source of truth (framework/store.py), tested as a team runs it: a
real PostgreSQL server, `mlflow server` on it with proxied artifacts, and `exp` processes in two
working directories (separate result caches and Lightning folders, standing in for two machines)
that share nothing but the server's URL.

One PostgreSQL and one mlflow server serve the whole module (xdist group "team_store"); both are
stopped by pid at its end. Without PostgreSQL or psycopg2 these tests skip; with EXPSPEC_CI=1
they fail (`.ci/run` installs them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from services import missing_postgres, mlflow_server, postgres, require
from kill_resume import KILL_AT

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"
PAPER = "team_store_test"
SHORT = [f"paper={PAPER}", "trainer.max_steps=40", "trainer.log_every_n_steps=5"]

pytestmark = pytest.mark.xdist_group("team_store")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The URL of an `mlflow server` on a fresh PostgreSQL database, for this module."""
    require(missing_postgres())
    with postgres() as database, mlflow_server(database) as url:
        yield url


def exp(server: str, cwd: Path, *argv: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`exp ARGV` in `cwd` with the server as its store and the default local folders (so each
    working directory has its own `.expspec/cache` and `.expspec/runs`)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("EXPSPEC_CACHE_DIR", "EXPSPEC_RUNS_DIR", "EXPSPEC_PARENT_RUN_ID", "EXPSPEC_RUN_ID")}
    env.update({"MLFLOW_TRACKING_URI": server, "PYTHONPATH": str(ROOT), **(extra_env or {})})
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "framework.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _runs(client: MlflowClient, spec_hash: str) -> list:
    experiment = client.get_experiment_by_name(PAPER)
    return client.search_runs([experiment.experiment_id], f"tags.`expspec.spec_hash` = '{spec_hash}'")


def test_init_spec_in_directory_b_reuses_the_weights_directory_a_uploaded(server: str, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "pretrain.yaml").write_text(f"extends: {TINY}\nname: team-pretrain\n")
    (specs / "finetune.yaml").write_text("extends: pretrain.yaml\nname: team-finetune\n"
                                         "init: {spec: pretrain.yaml, overrides: " + repr(SHORT) + "}\n")
    a, b = tmp_path / "machine_a", tmp_path / "machine_b"
    done = exp(server, a, "run", str(specs / "pretrain.yaml"), *SHORT)
    assert done.returncode == 0, done.stderr[-3000:]
    (a_weights,) = (a / ".expspec/cache").glob("*/final.ckpt")
    upstream_hash = a_weights.parent.name

    done = exp(server, b, "run", str(specs / "finetune.yaml"), *SHORT)
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(server)
    (upstream,) = _runs(client, upstream_hash)  # B trained no second pretrain run
    assert f"result of spec hash {upstream_hash} fetched from run {upstream.info.run_id}" in done.stderr
    b_weights = b / ".expspec/cache" / upstream_hash / "final.ckpt"
    a_state, b_state = (torch.load(p, weights_only=True)["state_dict"] for p in (a_weights, b_weights))
    assert a_state.keys() == b_state.keys() and all(torch.equal(a_state[k], b_state[k]) for k in a_state)
    (finetune,) = [r for r in client.search_runs([upstream.info.experiment_id], "tags.`expspec.name` = 'team-finetune'")]
    assert finetune.info.status == "FINISHED"
    assert finetune.data.tags["expspec.init_checkpoint"] == str(b_weights.relative_to(b))
    assert sorted(a.path for a in client.list_artifacts(upstream.info.run_id, "result")) == \
        ["result/final.ckpt", "result/result.json"]

    # a sweep in B skips the trial A finished (same spec hash) and runs only the other one
    (specs / "seeds.yaml").write_text("extends: pretrain.yaml\nname: team-seeds\nsweep: {grid: {seed: [0, 1]}}\n")
    done = exp(server, b, "sweep", str(specs / "seeds.yaml"), *SHORT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"[skip] seed=0: already finished (run {upstream.info.run_id[:8]}, same spec hash)" in done.stdout
    assert "summary: 1 skipped, 1 finished" in done.stdout


def test_a_run_killed_in_directory_a_resumes_in_directory_b_from_the_stored_checkpoint(server: str,
                                                                                       tmp_path: Path) -> None:
    """A run SIGKILLed mid-training on machine A (its resume checkpoint uploaded at each write) is
    continued by `exp resume RUN_ID` on machine B, which has none of A's files, into the same
    run, and ends with the test metrics of an uninterrupted run."""
    a, b, reference = tmp_path / "machine_a", tmp_path / "machine_b", tmp_path / "reference"
    overrides = [*SHORT, "seed=3"]
    done = exp(server, reference, "run", str(TINY), *overrides)
    assert done.returncode == 0, done.stderr[-3000:]
    fast = {"EXPSPEC_RESUME_MIN_SECONDS": "0", "EXPSPEC_METRICS_FLUSH_SECONDS": "0"}
    a.mkdir()
    killed = subprocess.run([sys.executable, "-c", KILL_AT.format(step=27), "run", str(TINY), *overrides],
                            cwd=a, capture_output=True, text=True, timeout=600,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("EXPSPEC_")},
                                 "MLFLOW_TRACKING_URI": server, "PYTHONPATH": str(ROOT), **fast})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    (folder,) = (a / ".expspec/runs").glob("*/*")
    run_id = folder.name

    done = exp(server, b, "resume", run_id)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resume checkpoint of run {run_id} fetched from the store" in done.stderr
    client = MlflowClient(server)
    resumed = client.get_run(run_id)
    assert resumed.info.status == "FINISHED" and resumed.data.tags["expspec.resumed"] == "true"
    (uninterrupted,) = [r for r in _runs(client, resumed.data.tags["expspec.spec_hash"]) if r.info.run_id != run_id]
    tests = {k: v for k, v in uninterrupted.data.metrics.items() if k.startswith("test/")}
    assert tests and {k: resumed.data.metrics[k] for k in tests} == tests
