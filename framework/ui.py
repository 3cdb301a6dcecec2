"""`exp ui`: the MLflow UI on the store `exp run` writes to, and links that open what to compare.

    exp ui [--tracking-uri URI] [--port N] [--host H]

The store is resolved as `exp run` resolves it (`framework.tracking.tracking_uri`: the option,
else $MLFLOW_TRACKING_URI, else ./mlflow.db). On a local store, `mlflow server` runs on it as a
child process, on a free port unless `--port` is given, until Ctrl-C or SIGTERM, which stop it
(its whole process group) before `exp ui` exits 0. On a team server (an http(s):// URI) nothing
is started: `exp ui` writes the saved views on that server, prints the same links with the
server's address, and exits 0.

What MLflow 3.17's UI does, read in its bundle (mlflow/server/js/build) and tried in headless
Chromium (tests/framework/test_ui_browser.py):

- An experiment page opens in the GenAI view (traces overview, assistant panel) unless the URL
  says `?workflowType=machine_learning`, or the browser's local storage remembers that choice;
  the experiment tag `mlflow.experimentKind` does not decide it. Every link carries the parameter.
- `#/experiments/<id>/runs?...&viewStateShareKey=<key>` opens a saved view: the JSON in the
  experiment tag `mlflow.sharedViewState.<key>`, here the selected columns (``params.`a.b` ``,
  ``metrics.`test/x` ``). The UI ignores it when the URL also has search parameters
  (`searchFilter`, `orderByKey`, ...), and does not keep expanded rows: a sweep's parent row
  opens with one click on its expander.
- `#/compare-runs?runs=[ids]&experiments=[ids]` compares runs: params, metrics, plots (in the
  GenAI sidebar, unless `workflowType=machine_learning` too).

`exp ui` writes the saved view of every experiment the store holds (`VIEW_KEY`), choosing the
params that vary across its runs and its test metrics (as `exp compare` does), and prints the
runs-table link of each experiment and the compare link of each one's latest sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

VIEW_KEY = "expspec"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
SWEEP_TAG = "expspec.sweep"
OBJECTIVE_TAG = "expspec.sweep_objective"  # on a search sweep's parent run: the metric it optimizes
NAME_COLUMN = "attributes.`Run Name`"
START_SECONDS = 120.0  # the server's start on a loaded machine, at most
STOP_SECONDS = 10.0  # after SIGTERM, before SIGKILL


@dataclass
class ExperimentLinks:
    """The links `exp ui` prints for one experiment."""

    name: str
    runs: str
    columns: list[str]
    sweep: str | None = None  # the latest sweep's parent run name
    compare: str | None = None
    compared: list[str] = field(default_factory=list)  # the run ids of the compare link


def runs_link(base: str, experiment_id: str) -> str:
    """The experiment's runs table in the training view, with the saved view `VIEW_KEY`."""
    return f"{base}/#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"


def compare_link(base: str, experiment_id: str, run_ids: Sequence[str]) -> str:
    """MLflow's compare view of these runs, with the training view's sidebar."""
    def listed(values: Sequence[str]) -> str:  # ["a","b"] as MLflow writes it, quotes escaped
        return urllib.parse.quote(json.dumps(list(values), separators=(",", ":")), safe="[],")

    return (f"{base}/#/compare-runs?runs={listed(run_ids)}&experiments={listed([experiment_id])}"
            "&workflowType=machine_learning")


def view_state(runs: Sequence[Run], axes: Sequence[str] = (), objective: str | None = None) -> dict[str, Any]:
    """The saved view of an experiment's runs, what was varied first: the latest sweep's swept
    params (`axes`) and its objective metric, then the other params that vary across the runs,
    then the test metrics (else val, else all; `framework.compare.default_metrics`). `columnOrder`
    puts them right after the run's name, before MLflow's own columns, so that they are the
    first a reader sees (the UI otherwise shows the metric columns before the params)."""
    from framework.compare import default_metrics, varied_params

    params = [*axes, *(p for p in varied_params(runs) if p not in axes)]
    metrics = [*([objective] if objective else []), *(m for m in default_metrics(runs) if m != objective)]
    columns = [f"params.`{p}`" for p in params] + [f"metrics.`{m}`" for m in metrics]
    return {"selectedColumns": columns, "columnOrder": [NAME_COLUMN, *columns]}


def experiment_links(client: MlflowClient, base: str) -> list[ExperimentLinks]:
    """Write each experiment's saved view (`VIEW_TAG`) and return its links; experiments
    without runs are left out."""
    from framework.compare import search_runs, varied_params

    links = []
    for experiment in client.search_experiments(max_results=1000):
        runs = search_runs(client, [experiment.experiment_id], "attributes.status = 'FINISHED'")
        if not runs:
            continue
        parents = {r.data.tags.get("mlflow.parentRunId") for r in runs}
        leaves = [r for r in runs if r.info.run_id not in parents and r.data.params]
        sweeps = sorted((r for r in runs if r.data.tags.get(SWEEP_TAG) == "true"), key=lambda r: r.info.start_time)
        latest = sweeps[-1] if sweeps else None
        children = [r for r in runs if latest and r.data.tags.get("mlflow.parentRunId") == latest.info.run_id]
        axes = varied_params(children) if len(children) > 1 else []  # what the sweep's trials differ in
        objective = latest.data.tags.get(OBJECTIVE_TAG) if latest else None
        state = view_state(leaves, axes, objective)
        client.set_experiment_tag(experiment.experiment_id, VIEW_TAG, json.dumps(state))
        columns = [c.split(".", 1)[1].strip("`") for c in state["selectedColumns"]]
        found = ExperimentLinks(experiment.name, runs_link(base, experiment.experiment_id), columns)
        if latest:
            found.sweep, found.compared = latest.info.run_name, [r.info.run_id for r in children]
            found.compare = compare_link(base, experiment.experiment_id, found.compared) if children else None
        links.append(found)
    return links


def describe_links(links: Sequence[ExperimentLinks]) -> str:
    """The lines `exp ui` prints about the links."""
    if not links:
        return "  the store has no finished runs yet: `exp run SPEC` first"
    lines = []
    for link in links:
        lines.append(f"  {link.name}: runs table (columns {', '.join(link.columns) or 'chosen in the UI'})")
        lines.append(f"    {link.runs}")
        if link.compare:
            lines.append(f"  {link.name}: latest sweep '{link.sweep}', its {len(link.compared)} trials compared")
            lines.append(f"    {link.compare}")
    return "\n".join(lines)


def free_port(host: str) -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def start_server(uri: str, host: str, port: int) -> subprocess.Popen:
    """`mlflow server` on the store, in a process group of its own (so that stopping it stops
    its workers too), its output into a pipe read by `wait_ready`."""
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--host", host,
               "--port", str(port), "--workers", "1"]
    # Job execution (GenAI judges, issue detection) starts a job runner and six queue consumers.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)


def wait_ready(server: subprocess.Popen, base: str, seconds: float = START_SECONDS) -> None:
    """Return once `base/health` answers; RuntimeError with the server's output when it exits
    first or does not answer within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            output = server.stdout.read() if server.stdout else ""
            raise RuntimeError(f"mlflow server exited with code {server.returncode}:\n{output[-2000:]}")
        try:
            import urllib.request  # here: importing it costs every `exp` command ~13 ms

            with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    stop_server(server)
    raise RuntimeError(f"mlflow server did not answer at {base} within {seconds:.0f} s")


def stop_server(server: subprocess.Popen, seconds: float = STOP_SECONDS) -> None:
    """SIGTERM the server's process group; SIGKILL what is left of it after `seconds` (or once
    the server has exited: workers it started may outlive it)."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.wait(seconds)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait()


def cmd_ui(args: argparse.Namespace) -> int:
    from mlflow.tracking import MlflowClient

    from framework.compare import CompareError, store_uri

    try:
        uri = store_uri(args.tracking_uri)
    except CompareError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    if uri.startswith(("http://", "https://")):  # a team server: its UI is already there
        base = uri.rstrip("/")
        links = experiment_links(MlflowClient(tracking_uri=uri), base)
        print(f"MLflow UI of the tracking server {base}")
        print(describe_links(links), flush=True)
        return 0
    port = args.port or free_port(args.host)
    base = f"http://{args.host}:{port}"
    # Ctrl-C and SIGTERM stop the server, even when this process started with SIGINT ignored
    # (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    server = start_server(uri, args.host, port)
    try:
        wait_ready(server, base)
        links = experiment_links(MlflowClient(tracking_uri=uri), base)
        print(f"MLflow UI of {uri} at {base}  (Ctrl-C stops it)")
        print(describe_links(links), flush=True)
        _drain(server)
    except KeyboardInterrupt:
        print("stopping the MLflow UI", file=sys.stderr)
    finally:
        stop_server(server)
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _drain(server: subprocess.Popen) -> None:
    """Read the server's output until it exits (its access log is not shown: the links are)."""
    assert server.stdout is not None
    for _ in server.stdout:
        pass
    server.wait()


def add_parser(subparsers: Any) -> None:
    """Register `exp ui` on the `exp` sub-command parsers."""
    u = subparsers.add_parser("ui", help="the MLflow UI on the runs' store, with links to the runs table and compare view",
                              description="The MLflow UI on the runs' store, with links to each experiment's runs "
                                          "table and its latest sweep's compare view. On a local store (sqlite) it "
                                          "starts `mlflow server` until Ctrl-C; with a team server "
                                          "(MLFLOW_TRACKING_URI or --tracking-uri http://...) it starts nothing, "
                                          "writes the saved views there and prints links on that server.")
    u.add_argument("--tracking-uri", help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db (as `exp run`)")
    u.add_argument("--port", type=int, default=0, help="local store only; default: a free port")
    u.add_argument("--host", default="127.0.0.1", help="local store only; default: 127.0.0.1 (this machine only)")
    u.set_defaults(func=cmd_ui)
