"""The tracking store as the source of truth for results: what one machine's run produced, another
machine finds there by its spec hash.

- Every finished run uploads its result as MLflow artifacts: `result/result.json` (the metrics
  and hashes the result cache holds) and `result/final.ckpt` (its final weights), then gets the
  tag `expspec.result = stored`. A staged spec's parent run uploads only `result.json`; each
  stage's weights are in its own run. On a local store `final.ckpt` is a hard link to the result cache's
  file (`log_file`), so the weights take their space once.
- `fetch_result(hash, operative)` finds the newest FINISHED run of the spec's experiment with that
  spec hash and a stored result, and downloads it into the result cache (`result_cache.cache_dir()`),
  where the next lookup finds it: the result cache is a front of the store, never the only copy.
  `init: {spec}` and `exp reproduce` obtain their runs this way (`runner.obtain`); a sweep's
  skip-finished logic reads the store's FINISHED runs by spec hash already.
- The resume checkpoint (`checkpoints/resume.ckpt`) is uploaded each time it is written when the
  store is not a local file (a tracking server; see `uploads_checkpoints`), so `exp resume
  RUN_ID` on another machine downloads it (`fetch_resume_checkpoint`).

Downloads land in a temporary folder beside their place and are renamed into it, so two processes
sharing one result cache never read a half-written file.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

    from framework.result_cache import RunResult

RESULT_DIR = "result"  # artifact folder of a run's result
RESULT_TAG = "expspec.result"  # "stored" once the result's artifacts are all uploaded
CHECKPOINT_DIR = "checkpoints"  # artifact folder of the resume checkpoint


def remote_store(uri: str) -> bool:
    """Whether the store is a tracking server, not a local file (sqlite:///, file:, a path)."""
    return not (uri.startswith(("sqlite:", "file:")) or "://" not in uri)


def uploads_checkpoints(uri: str) -> bool:
    """Whether a run uploads its resume checkpoint at every write: when the store is not a local
    file (`remote_store`), since then no other machine can read the local one."""
    return remote_store(uri)


def upload_result(client: MlflowClient, run_id: str, result: RunResult) -> None:
    """Upload `result` (its result.json, and its final weights unless it is a staged parent) to
    the run and tag it `expspec.result = stored`. The weights go through `log_file`: on a local
    store the artifact is the cache's file itself, hard-linked, not a second copy."""
    with tempfile.TemporaryDirectory(prefix="expspec-result-") as folder:
        path = Path(folder) / "result.json"
        path.write_text(json.dumps(result.to_json(), indent=1))
        client.log_artifact(run_id, str(path), RESULT_DIR)
    if result.checkpoint and not result.stages:
        log_file(client, run_id, result.checkpoint, RESULT_DIR)
    client.set_tag(run_id, RESULT_TAG, "stored")


def log_file(client: MlflowClient, run_id: str, path: str, folder: str) -> None:
    """Log the file `path` as the run's artifact `folder/<its name>`. When the run's artifacts are
    a local folder (a sqlite or file store's default), the artifact is a hard link to `path`: the
    final weights are on disk once, not once in the cache and again under mlruns/, and nothing is
    copied. This is safe because neither file is ever written in place: the cache replaces a
    final.ckpt by a rename (`runner._save_final`), which leaves the linked artifact with the
    weights its run produced, and MLflow never rewrites an artifact. Elsewhere (an artifact
    store on a server, another filesystem: no hard link across devices) MLflow copies or
    uploads it."""
    from urllib.parse import urlparse

    uri = client.get_run(run_id).info.artifact_uri
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        target = Path(parsed.path if parsed.scheme else uri) / folder / Path(path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
            return
        except OSError:  # another filesystem, a file system without hard links, a name taken
            pass
    client.log_artifact(run_id, path, folder)


LINK_TAG = "expspec.linked_from"  # on a sweep's child run that links a reused run (framework.sweep_runs.link_run)


def find_run(client: MlflowClient, paper: str, spec_hash: str) -> Any | None:
    """The newest FINISHED run of experiment `paper` with this spec hash and a stored result.
    A sweep's link to a reused run (tag `expspec.linked_from`) holds no artifacts and is never
    the answer (stores written before links stopped copying the result tag still have such links,
    with the original's start time)."""
    experiment = client.get_experiment_by_name(paper)
    if experiment is None:
        return None
    runs = client.search_runs(
        [experiment.experiment_id],
        f"tags.`expspec.spec_hash` = '{spec_hash}' and tags.`{RESULT_TAG}` = 'stored' "
        "and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"], max_results=50)
    return next((run for run in runs if LINK_TAG not in run.data.tags), None)


def fetch_result(spec_hash: str, operative: dict[str, Any]) -> RunResult | None:
    """The stored result of a finished run with this hash in the spec's store, downloaded into
    the result cache (its checkpoint a local path); None when the store has none."""
    from framework.tracking import client as store_client

    mlflow_client = store_client(operative["tracking"]["uri"])
    run = find_run(mlflow_client, operative["paper"], spec_hash)
    if run is None:
        return None
    return _download(mlflow_client, run, operative["paper"])


def _download(mlflow_client: MlflowClient, run: Any, paper: str) -> RunResult | None:
    from framework.result_cache import RunResult, cache_dir, save_result

    run_id = run.info.run_id
    with tempfile.TemporaryDirectory(prefix="expspec-fetch-") as scratch:
        data = json.loads(Path(mlflow_client.download_artifacts(run_id, f"{RESULT_DIR}/result.json", scratch))
                          .read_text())
    result = RunResult.from_json(data)
    if result.stages:
        for name, stage in result.stages.items():
            stage_run = find_run(mlflow_client, paper, stage.spec_hash)
            fetched = _download(mlflow_client, stage_run, paper) if stage_run else None
            if fetched is None:
                return None  # a stage's weights are gone from the store: not a usable result
            result.stages[name] = fetched
        result.checkpoint = list(result.stages.values())[-1].checkpoint
    elif result.checkpoint:
        result.checkpoint = str(_download_file(mlflow_client, run_id, f"{RESULT_DIR}/final.ckpt",
                                               cache_dir() / result.spec_hash / "final.ckpt"))
    save_result(result)
    print(f"result of spec hash {result.spec_hash} fetched from run {run_id} in the store "
          f"{mlflow_client.tracking_uri}", file=sys.stderr, flush=True)
    return result


def _download_file(mlflow_client: MlflowClient, run_id: str, artifact: str, target: Path) -> Path:
    """Download one artifact to `target`, through a temporary folder beside it and a rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".fetch-", dir=target.parent)
    try:
        os.replace(mlflow_client.download_artifacts(run_id, artifact, scratch), target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def fetch_resume_checkpoint(mlflow_client: MlflowClient, run: Any, target: Path) -> Path | None:
    """The run's uploaded resume checkpoint, downloaded to `target`; None when it has none."""
    names = [a.path for a in mlflow_client.list_artifacts(run.info.run_id, CHECKPOINT_DIR)]
    if f"{CHECKPOINT_DIR}/resume.ckpt" not in names:
        return None
    path = _download_file(mlflow_client, run.info.run_id, f"{CHECKPOINT_DIR}/resume.ckpt", target)
    print(f"resume checkpoint of run {run.info.run_id} fetched from the store {mlflow_client.tracking_uri}",
          file=sys.stderr, flush=True)
    return path
