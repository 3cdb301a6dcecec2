"""framework/multinode.py: `torchrun --nnodes 2 --nproc-per-node 1` on 127.0.0.1 (gloo) through a
spec that starts from another spec's weights (`init: {spec}`): the two "nodes" run in working
directories of their own (separate caches, as two machines); the upstream is trained once, on
rank zero, the other rank receives its weights, and the run is one MLflow run."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[2]
SHORT = "trainer: {max_steps: 6, limit_val_batches: 2, limit_test_batches: 2, log_every_n_steps: 1}\n"


def _node(rank: int, port: int, spec: Path, home: Path) -> subprocess.Popen:
    home.mkdir(parents=True)
    # a relative cache: rank zero's weights path names no file on the other "machine"
    env = {**os.environ, "EXPSPEC_CACHE_DIR": "cache", "EXPSPEC_RUNS_DIR": str(home / "runs"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    argv = [shutil.which("torchrun") or "torchrun", "--nnodes", "2", "--nproc-per-node", "1", "--node-rank", str(rank),
            "--master-addr", "127.0.0.1", "--master-port", str(port), "-m", "framework.cli", "run", str(spec),
            "hardware.num_nodes=2", "hardware.devices=1", "hardware.strategy=ddp", "hardware.accelerator=cpu"]
    return subprocess.Popen(argv, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _wait(process: subprocess.Popen) -> str:
    try:
        return process.communicate(timeout=400)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_two_nodes_one_run_init_resolved_once_on_rank_zero(tracked: str, tmp_path: Path) -> None:
    if not shutil.which("torchrun"):
        pytest.skip("torchrun is not on PATH (it comes with torch)")
    tiny = ROOT / "specs/cvm_fairness/tiny.yaml"
    (tmp_path / "upstream.yaml").write_text(f"extends: {tiny}\nname: multinode-upstream\npaper: multinode_test\n{SHORT}")
    spec = tmp_path / "downstream.yaml"
    spec.write_text(f"extends: {tiny}\nname: multinode-run\npaper: multinode_test\n{SHORT}init: {{spec: upstream.yaml}}\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    nodes = [_node(rank, port, spec, tmp_path / f"node{rank}") for rank in (0, 1)]
    outputs = [_wait(node) for node in nodes]
    assert [n.returncode for n in nodes] == [0, 0], "\n".join(outputs)
    client = MlflowClient(tracked)
    runs = client.search_runs([client.get_experiment_by_name("multinode_test").experiment_id])
    assert sorted(r.data.tags["expspec.name"] for r in runs) == ["multinode-run", "multinode-upstream"]  # upstream once
    run = next(r for r in runs if r.data.tags["expspec.name"] == "multinode-run")
    assert run.info.status == "FINISHED" and run.data.params["hardware.num_nodes"] == "2"
    steps = [m.step for m in client.get_metric_history(run.info.run_id, "train/loss")]
    assert steps and len(steps) == len(set(steps)), "a step was logged by more than one rank"
    upstream = tmp_path / "node0" / run.data.tags["expspec.init_checkpoint"]
    received = tmp_path / "node1" / run.data.tags["expspec.init_checkpoint"]
    assert received.read_bytes() == upstream.read_bytes()  # rank 1 got rank 0's weights through the store
    assert not (received.parent / "result.json").exists()  # and trained nothing
