"""framework/ui.py without a browser: the saved view and links `exp ui` writes and prints, and its
errors. tests/framework/test_ui_browser.py opens them in Chromium."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from framework.cli import main
from framework.ui import VIEW_TAG, compare_link, describe_links, experiment_links, free_port, runs_link, stop_server

BASE = "http://127.0.0.1:5000"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[MlflowClient, str, dict[str, str]]:
    """An experiment with a plain run and a sweep of two trials over optimizer.lr."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('ui') / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("ui_demo", artifact_location=str(tmp_path_factory.mktemp("artifacts")))

    def finished(name: str, lr: str | None, tags: dict[str, str], start: int) -> str:
        run = client.create_run(experiment, run_name=name, tags=tags, start_time=start).info.run_id
        if lr is not None:
            params = [Param("optimizer.lr", lr), Param("seed", "0"), Param("tracking.uri", f"sqlite:///{lr}.db")]
            client.log_batch(run, params=params, metrics=[Metric("test/accuracy", float(lr) * 5, 0, 1),
                                                          Metric("train/loss", 0.5, 0, 1)])
        client.set_terminated(run, "FINISHED")
        return run

    ids = {"plain": finished("demo", "0.1", {}, 1000)}
    ids["parent"] = finished("demo sweep", None, {"expspec.sweep": "true"}, 2000)
    for i, lr in enumerate(("0.001", "0.01")):
        ids[lr] = finished(f"lr={lr}", lr, {"mlflow.parentRunId": ids["parent"]}, 3000 + i)
    return client, experiment, ids


def test_saved_view_shows_the_varied_params_and_the_test_metrics(store: tuple[MlflowClient, str, dict[str, str]]) -> None:
    client, experiment, ids = store
    (links,) = experiment_links(client, BASE)
    state = json.loads(client.get_experiment(experiment).tags[VIEW_TAG])
    columns = ["params.`optimizer.lr`", "metrics.`test/accuracy`"]  # the sweep's axis leads
    assert state == {"selectedColumns": columns, "columnOrder": ["attributes.`Run Name`", *columns]}
    assert links.columns == ["optimizer.lr", "test/accuracy"]
    assert links.runs == f"{BASE}/#/experiments/{experiment}/runs?workflowType=machine_learning&viewStateShareKey=expspec"
    assert links.sweep == "demo sweep" and sorted(links.compared) == sorted([ids["0.001"], ids["0.01"]])
    assert links.compare == compare_link(BASE, experiment, links.compared)


def test_the_swept_params_and_the_objective_lead_the_view() -> None:
    """The latest sweep's axes, then its objective, then the other varied params and metrics."""
    from types import SimpleNamespace

    from framework.ui import view_state

    def run(lr: str, width: str, metrics: dict[str, float]) -> Any:
        return SimpleNamespace(data=SimpleNamespace(params={"optimizer.lr": lr, "model.width": width}, metrics=metrics))

    runs = [run("0.1", "8", {"test/accuracy": 0.5, "test/loss": 1.0}), run("0.01", "16", {"test/accuracy": 0.6, "test/loss": 0.9})]
    state = view_state(runs, axes=["optimizer.lr"], objective="test/loss")
    assert state["selectedColumns"] == ["params.`optimizer.lr`", "params.`model.width`", "metrics.`test/loss`",
                                        "metrics.`test/accuracy`"]
    assert state["columnOrder"][0] == "attributes.`Run Name`" and state["columnOrder"][1:] == state["selectedColumns"]


def test_links_as_printed(store: tuple[MlflowClient, str, dict[str, str]]) -> None:
    client, experiment, ids = store
    text = describe_links(experiment_links(client, BASE))
    assert text.splitlines()[:3] == [
        "  ui_demo: runs table (columns optimizer.lr, test/accuracy)",
        f"    {runs_link(BASE, experiment)}",
        "  ui_demo: latest sweep 'demo sweep', its 2 trials compared",
    ]
    assert describe_links([]) == "  the store has no finished runs yet: `exp run SPEC` first"


def test_on_a_team_server_exp_ui_starts_nothing_and_links_to_that_server(
        store: tuple[MlflowClient, str, dict[str, str]], capfd: pytest.CaptureFixture[str]) -> None:
    """MLFLOW_TRACKING_URI=http://...: the saved view is written on the (real) server and the
    printed links use its address; `exp ui` returns at once, with no server of its own."""
    from services import mlflow_server

    client, experiment, _ = store
    client.delete_experiment_tag(experiment, VIEW_TAG)
    with mlflow_server(client.tracking_uri) as url:
        children_before = _children()
        assert main(["ui", "--tracking-uri", url]) == 0
        assert _children() == children_before  # nothing started (and nothing left running)
        printed = capfd.readouterr().out
        assert printed.splitlines()[0] == f"MLflow UI of the tracking server {url}"
        assert f"    {runs_link(url, experiment)}" in printed.splitlines()
        assert json.loads(MlflowClient(url).get_experiment(experiment).tags[VIEW_TAG])["selectedColumns"] == [
            "params.`optimizer.lr`", "metrics.`test/accuracy`"]


def _children() -> set[int]:
    """This process's child processes (Linux)."""
    found = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return {int(p) for p in found.read_text().split()} if found.is_file() else set()


def test_compare_link_lists_runs_as_mlflow_writes_them() -> None:
    assert compare_link(BASE, "3", ["a1", "b2"]) == (
        f"{BASE}/#/compare-runs?runs=[%22a1%22,%22b2%22]&experiments=[%223%22]&workflowType=machine_learning")


def test_free_port_is_free() -> None:
    port = free_port("127.0.0.1")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


def test_missing_store_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert main(["ui", "--tracking-uri", missing]) == 2
    assert capsys.readouterr().err == (f"error: no MLflow store at {missing}: run `exp run SPEC` here first, or pass "
                                       "--tracking-uri (or set MLFLOW_TRACKING_URI)\n")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_server_ends_the_whole_process_group() -> None:
    # a parent that starts a child in its group and ignores SIGTERM: both must end
    code = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print('up', flush=True); time.sleep(60)")
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert server.stdout is not None and server.stdout.readline() == "up\n"
        stop_server(server, seconds=1)
        assert server.returncode == -signal.SIGKILL  # it ignored SIGTERM
        deadline = time.monotonic() + 10  # the orphaned child is reaped by init once killed
        while _group_alive(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(server.pid)
    finally:
        if server.poll() is None:
            server.kill()
