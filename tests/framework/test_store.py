"""framework/store.py: a finished run's result (metrics, final weights) is uploaded to its MLflow
run and found again by spec hash from another result cache; which stores get each resume
checkpoint. Across two working directories on a real tracking server: test_team_store.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from framework.runner import obtain, run
from framework.store import RESULT_TAG, remote_store, uploads_checkpoints
from test_stages import STAGED

TINY = Path(__file__).resolve().parents[2] / "specs/cvm_fairness/tiny.yaml"


def _same_weights(a: str, b: str) -> bool:
    left, right = (torch.load(p, weights_only=True)["state_dict"] for p in (a, b))
    return left.keys() == right.keys() and all(torch.equal(left[k], right[k]) for k in left)


def test_a_staged_result_missing_from_the_local_cache_is_fetched_from_the_store(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    spec = tmp_path / "staged.yaml"
    spec.write_text(STAGED)
    first = run(spec)
    assert MlflowClient(tracked).get_run(first.run_id).data.tags[RESULT_TAG] == "stored"
    other = tmp_path / "other-cache"  # another machine's cache: empty
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(other))
    capsys.readouterr()
    fetched = obtain(spec)
    assert (fetched.run_id, fetched.metrics, list(fetched.stages)) == (first.run_id, first.metrics, list(first.stages))
    for name, stage in fetched.stages.items():
        assert Path(stage.checkpoint).is_relative_to(other) and stage.run_id == first.stages[name].run_id
        assert _same_weights(stage.checkpoint, first.stages[name].checkpoint)
    assert fetched.checkpoint == fetched.stages["fresh"].checkpoint
    assert f"result of spec hash {first.spec_hash} fetched from run {first.run_id}" in capsys.readouterr().err
    assert obtain(spec).to_json() == fetched.to_json()  # now from the result cache
    assert "fetched" not in capsys.readouterr().err


@pytest.mark.parametrize("uri, uploads", [
    ("sqlite:///mlflow.db", False),
    ("sqlite:////tmp/x/mlflow.db", False),
    ("file:///tmp/mlruns", False),
    ("mlruns", False),
    ("http://127.0.0.1:5000", True),
    ("https://mlflow.lab.example", True),
    ("postgresql+psycopg2://u@db/mlflow", True),
])
def test_resume_checkpoints_are_uploaded_when_the_store_is_not_a_local_file(uri: str, uploads: bool) -> None:
    assert uploads_checkpoints(uri) is uploads
    assert remote_store(uri) is uploads  # and metric writes are asynchronous (RunLogger)


def test_on_a_local_store_the_final_weights_artifact_is_the_cache_file_linked_not_a_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a new store's artifacts: ./mlruns, on the cache's file system
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("EXPSPEC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(tmp_path / "cache"))
    client = MlflowClient(store)
    first = run(TINY, ["trainer.max_steps=3"])
    artifact = Path(client.get_run(first.run_id).info.artifact_uri) / "result" / "final.ckpt"
    assert artifact.samefile(first.checkpoint)  # one file on disk, two names
    second = run(TINY, ["trainer.max_steps=3"])  # the same hash: the cache's file is replaced
    assert second.checkpoint == first.checkpoint and second.run_id != first.run_id
    assert not artifact.samefile(second.checkpoint) and artifact.stat().st_nlink == 1  # not written in place
    downloaded = client.download_artifacts(first.run_id, "result/final.ckpt", str(tmp_path / "download"))
    assert _same_weights(downloaded, second.checkpoint)


def test_a_sweeps_link_to_a_reused_run_is_never_the_stored_result(tracked: str, tmp_path: Path) -> None:
    """A link (framework.sweep_runs.link_run) copies the run's tags and start time but holds no
    artifacts: the store lookup must return the original, also for links written before links
    stopped copying the result tag (CI once picked such a link and failed on result.json)."""
    from framework.store import LINK_TAG, find_run
    from framework.sweep_runs import link_run

    first = run(TINY)
    client = MlflowClient(tracked)
    original = client.get_run(first.run_id)
    paper = client.get_experiment(original.info.experiment_id).name
    parent = client.create_run(original.info.experiment_id, run_name="a sweep").info.run_id
    link = link_run(client, original, parent, "seed=0")
    assert client.get_run(link).data.tags[LINK_TAG] == first.run_id
    assert RESULT_TAG not in client.get_run(link).data.tags
    assert find_run(client, paper, first.spec_hash).info.run_id == first.run_id
    client.set_tag(link, RESULT_TAG, "stored")  # a link as older versions wrote it
    for _ in range(3):
        assert find_run(client, paper, first.spec_hash).info.run_id == first.run_id
