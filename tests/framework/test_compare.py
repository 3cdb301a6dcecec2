"""framework/compare/: selecting runs, the rendered tables, the plots, and `exp compare` end to end."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from framework.compare import add_parser, plot_curves, plot_vs_param, render, select_runs, varied_params
from framework.compare.plots import log_axis

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXPERIMENT = "compare_demo"
# name, loss.terms.cvm.weight, test/accuracy, test/dp_gap, status
CHILDREN = [
    ("w0", "0", 0.9, 0.3, "FINISHED"),
    ("w3", "3", 0.8765432, 0.0512345, "FINISHED"),
    ("w7", "7", 0.75, 0.012345678, "FINISHED"),
    ("w9", "9", None, None, "FAILED"),
]


@dataclass
class Sweep:
    uri: str
    client: MlflowClient
    parent: str
    ids: dict[str, str]  # child name -> run id


@pytest.fixture(scope="module")
def sweep(store: str, tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """A parent run with four children (one FAILED), as a sweep over loss.terms.cvm.weight logs them."""
    client = MlflowClient(store)
    experiment = client.create_experiment(EXPERIMENT, artifact_location=str(tmp_path_factory.mktemp("artifacts")))
    parent = client.create_run(experiment, run_name="sweep", start_time=1000).info.run_id
    client.set_terminated(parent, "FINISHED")
    ids = {}
    for i, (name, weight, accuracy, gap, status) in enumerate(CHILDREN):
        run = client.create_run(experiment, run_name=name, start_time=2000 + i,
                                tags={"mlflow.parentRunId": parent}).info.run_id
        params = {"loss.terms.cvm.weight": weight, "optimizer.lr": "0.01", "tracking.uri": f"sqlite:///{i}.db"}
        metrics = [Metric("train/loss", 1.0 / (step + 1 + i), 0, step) for step in range(5)]
        metrics += [Metric(k, v, 0, 4) for k, v in (("test/accuracy", accuracy), ("test/dp_gap", gap)) if v is not None]
        client.log_batch(run, metrics=metrics, params=[Param(k, v) for k, v in params.items()])
        client.set_terminated(run, status)
        ids[name] = run
    return Sweep(store, client, parent, ids)


def compare(sweep: Sweep, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="exp")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["compare", *argv, "--tracking-uri", sweep.uri])
    return args.func(args)


def names(runs: list) -> list[str]:
    return [r.info.run_name for r in runs]


@pytest.mark.parametrize(("targets", "status", "expected"), [
    (["sweep:{parent}"], "FINISHED", ["w0", "w3", "w7"]),
    (["{parent}"], "FINISHED", ["w0", "w3", "w7"]),          # a parent run id means its children
    ([EXPERIMENT], "FINISHED", ["w0", "w3", "w7"]),          # the sweep's parent is left out
    ([EXPERIMENT], "all", ["w0", "w3", "w7", "w9"]),
    (["{w7}", "{w0}", "sweep:{parent}"], "FINISHED", ["w7", "w0", "w3"]),  # in order, each once
    (["{w9}"], "FINISHED", ["w9"]),                          # a run named by id ignores --status
    (["{w3_short}"], "FINISHED", ["w3"]),                    # the table's short id works
], ids=["sweep", "parent-id", "experiment", "status-all", "ids-deduplicated", "failed-by-id", "short-id"])
def test_select_runs(sweep: Sweep, targets: list[str], status: str, expected: list[str]) -> None:
    fill = {"parent": sweep.parent, **sweep.ids, "w3_short": sweep.ids["w3"][:8]}
    runs = select_runs(sweep.client, [t.format(**fill) for t in targets], status)
    assert names(runs) == expected


def test_varied_params_leave_out_identical_and_tracking(sweep: Sweep) -> None:
    runs = select_runs(sweep.client, [f"sweep:{sweep.parent}"])
    assert varied_params(runs) == ["loss.terms.cvm.weight"]
    assert varied_params(runs[:1]) == []


def test_markdown_table(sweep: Sweep, capsys: pytest.CaptureFixture[str]) -> None:
    assert compare(sweep, f"sweep:{sweep.parent}", "--format", "markdown", "--no-log") == 0
    expected = (
        "| run  | id       | status   | loss.terms.cvm.weight | test/accuracy | test/dp_gap |\n"
        "| ---- | -------- | -------- | --------------------: | ------------: | ----------: |\n"
        "| w0   | {w0} | FINISHED |                     0 |           0.9 |         0.3 |\n"
        "| w3   | {w3} | FINISHED |                     3 |        0.8765 |     0.05123 |\n"
        "| w7   | {w7} | FINISHED |                     7 |          0.75 |     0.01235 |\n"
    ).format(**{k: v[:8] for k, v in sweep.ids.items()})
    assert capsys.readouterr().out == expected


def test_csv_export_keeps_full_precision(sweep: Sweep, tmp_path: Path) -> None:
    out = tmp_path / "runs.csv"
    assert compare(sweep, EXPERIMENT, "--status", "all", "--format", "csv", "--output", str(out),
                   "--metrics", "test/accuracy", "--params", "optimizer.lr,loss.terms.cvm.weight") == 0
    w = {k: v[:8] for k, v in sweep.ids.items()}
    assert out.read_text() == (
        "run,id,status,optimizer.lr,loss.terms.cvm.weight,test/accuracy\n"
        f"w0,{w['w0']},FINISHED,0.01,0,0.9\n"
        f"w3,{w['w3']},FINISHED,0.01,3,0.8765432\n"
        f"w7,{w['w7']},FINISHED,0.01,7,0.75\n"
        f"w9,{w['w9']},FAILED,0.01,9,-\n"
    )


def test_plain_table() -> None:
    header = ["run", "id", "status", "optimizer.lr", "test/accuracy"]
    rows = [["a", "12345678", "FINISHED", "0.01", "0.9"], ["bb", "9abcdef0", "FAILED", "0.1", "-"]]
    assert render(header, rows, "table") == (
        "run  id        status    optimizer.lr  test/accuracy\n"
        "---  --------  --------  ------------  -------------\n"
        "a    12345678  FINISHED          0.01            0.9\n"
        "bb   9abcdef0  FAILED             0.1              -\n"
    )
    assert render(["run", "note"], [["a", "x|y"]], "markdown") == (
        "| run  | note |\n| ---- | ---- |\n| a    | x\\|y |\n"
    )


def test_plots_are_logged_to_the_sweep_parent(sweep: Sweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vs = tmp_path / "vs_weight.png"
    assert compare(sweep, f"sweep:{sweep.parent}", "--plot", str(vs), "--x", "loss.terms.cvm.weight") == 0
    assert vs.read_bytes().startswith(PNG_MAGIC)
    assert f"logged compare/table.md, compare/vs_weight.png to run {sweep.parent}" in capsys.readouterr().err
    logged = {f.path for f in sweep.client.list_artifacts(sweep.parent, "compare")}
    assert logged == {"compare/table.md", "compare/vs_weight.png"}
    table = Path(sweep.client.download_artifacts(sweep.parent, "compare/table.md", str(tmp_path))).read_text()
    assert table.startswith("| run  | id       | status   | loss.terms.cvm.weight | test/accuracy | test/dp_gap |\n")

    curves = tmp_path / "curves.png"
    assert compare(sweep, sweep.ids["w0"], sweep.ids["w3"], "--plot", str(curves), "--curves", "train/loss",
                   "--log-to", sweep.parent) == 0
    assert curves.read_bytes().startswith(PNG_MAGIC)
    assert "compare/curves.png" in {f.path for f in sweep.client.list_artifacts(sweep.parent, "compare")}


def test_plot_functions(sweep: Sweep, tmp_path: Path) -> None:
    runs = select_runs(sweep.client, [EXPERIMENT], "all")
    path = plot_vs_param(runs, "loss.terms.cvm.weight", ["test/accuracy", "test/dp_gap"], tmp_path / "a" / "vs.png")
    assert path.read_bytes().startswith(PNG_MAGIC)
    path = plot_curves(sweep.client, runs, "train/loss", tmp_path / "curves.png", title="train loss")
    assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["compare_dem"], 2, "error: no experiment or run named 'compare_dem' in {uri}. Did you mean 'compare_demo'?\n"),
    (["0" * 32], 2, "error: no run with id '00000000000000000000000000000000' in {uri}\n"),
    ([EXPERIMENT, "--status", "killed"], 1, f"error: no runs selected by {EXPERIMENT} with status KILLED (--status all for any)\n"),
    ([EXPERIMENT, "--metrics", "test/acc"], 2, "error: --metrics: no selected run has a metric 'test/acc'. Did you mean 'test/accuracy'?\n"),
    ([EXPERIMENT, "--params", "optimizer.learning_rate"], 2, "error: --params: no selected run has a param 'optimizer.learning_rate'. Did you mean 'optimizer.lr'?\n"),
    (["{w0}", "--plot", "p.png"], 2, "error: --plot needs --x PARAM or --curves METRIC\n"),  # no varied param to default to
    ([EXPERIMENT, "--curves", "train/loss"], 2, "error: --x and --curves need --plot PNG\n"),
    ([EXPERIMENT, "--plot", "p.png", "--curves", "train/los"], 2,
     "error: --curves: no selected run has a metric 'train/los'. Did you mean 'train/loss'?\n"),
    ([EXPERIMENT, "--plot", "p.png", "--x", "loss.terms.cvm.wieght"], 2,
     "error: --x: no run has a param 'loss.terms.cvm.wieght'. Did you mean 'loss.terms.cvm.weight'?\n"),
    ([EXPERIMENT, "--log-to", "feedbeef"], 2, "error: no run whose id starts with 'feedbeef' in {uri}\n"),
], ids=["unknown-experiment", "unknown-run", "no-runs", "unknown-metric", "unknown-param", "plot-without-x",
        "curves-without-plot", "unknown-curve", "unknown-x", "unknown-log-to"])
def test_errors(sweep: Sweep, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str) -> None:
    assert compare(sweep, *(a.format(**sweep.ids) for a in argv)) == code
    out, err = capsys.readouterr()
    assert err == message.format(uri=sweep.uri)
    assert out == ""  # checked before any output


def _axes_of(path: Path) -> tuple[int, int]:
    """(width, height) in pixels of a written PNG."""
    from PIL import Image

    with Image.open(path) as image:
        return image.size


def test_one_panel_per_metric(sweep: Sweep, tmp_path: Path) -> None:
    runs = select_runs(sweep.client, [EXPERIMENT], "all")
    one = plot_vs_param(runs, "loss.terms.cvm.weight", ["test/accuracy"], tmp_path / "one.png")
    two = plot_vs_param(runs, "loss.terms.cvm.weight", ["test/accuracy", "test/dp_gap"], tmp_path / "two.png")
    assert _axes_of(one) == (840, 540)  # 7 x 4.5 in at 120 dpi
    assert _axes_of(two) == (1008, 432)  # two 4.2 x 3.6 in panels side by side


@pytest.mark.parametrize(("values", "log"), [
    ([0.001, 0.01, 0.1], True),      # 100x
    ([1.0, 3.0, 10.5], True),        # just over 10x
    ([1.0, 10.0], False),            # exactly 10x: linear
    ([0.0, 3.0, 15.0], False),       # zero cannot sit on a log axis
    ([-1.0, 100.0], False),
    ([None, 2.0, 50.0], True),       # non-numeric entries are ignored
    ([], False),
])
def test_log_axis_when_values_span_more_than_10x(values: list, log: bool) -> None:
    assert log_axis(values) is log
