"""`exp compare` on the command line: its arguments, and the steps from targets to table, plot
and logged artifacts (see framework.compare for what it does)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from framework.compare.plots import plot_curves, plot_vs_param
from framework.compare.selection import (
    EXIT_NO_RUNS, STATUSES, CompareError, Selection, did_you_mean, find_run, resolve_targets,
)
from framework.compare.tables import (
    FORMATS, all_metrics, all_params, default_metrics, render, table_rows, varied_params,
)

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient


def store_uri(arg: str | None) -> str:
    """The store to read (`framework.tracking.tracking_uri`); CompareError when it is a sqlite file
    that does not exist, since MLflow would create an empty store there and report no experiments."""
    from framework.tracking import tracking_uri

    uri = tracking_uri(arg)
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
        raise CompareError(f"no MLflow store at {uri}: run `exp run SPEC` here first, or pass "
                           f"--tracking-uri (or set MLFLOW_TRACKING_URI)")
    return uri


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        return compare(args)
    except CompareError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


def compare(args: argparse.Namespace) -> int:
    """Select the runs, check every name, then print (or write) the table, draw the plot and log
    the artifacts. Every mistake is found before anything is written."""
    from mlflow.tracking import MlflowClient

    if (args.x or args.curves) and not args.plot:
        raise CompareError("--x and --curves need --plot PNG")
    client = MlflowClient(tracking_uri=store_uri(args.tracking_uri))
    selection = resolve_targets(client, args.targets, args.status)
    runs = selection.runs
    if not runs:
        status = "" if args.status.upper() == "ALL" else f" with status {args.status.upper()} (--status all for any)"
        raise CompareError(f"no runs selected by {' '.join(args.targets)}{status}", EXIT_NO_RUNS)
    metrics = _chosen("metrics", args.metrics, default_metrics(runs), all_metrics(runs))
    params = _chosen("params", args.params, varied_params(runs), all_params(runs))
    x = _plot_axis(runs, args, metrics)
    log_to = _log_target(client, selection, args)

    _write_table(runs, params, metrics, args)
    _print_importances(client, selection.sweep_parents)
    plot = None
    if args.plot:
        plot = (plot_curves(client, runs, args.curves, args.plot) if args.curves
                else plot_vs_param(runs, x, metrics, args.plot))
        print(f"wrote {plot}", file=sys.stderr)
    if log_to:
        _log_artifacts(client, log_to, render(*table_rows(runs, params, metrics), "markdown"), plot)
    return 0


def _chosen(what: str, text: str | None, default: list[str], known: Sequence[str]) -> list[str]:
    """The comma-separated names of `--metrics`/`--params` (default when not given), each known."""
    if text is None:
        return default
    names = [part.strip() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in known:
            raise CompareError(f"--{what}: no selected run has a {what[:-1]} '{name}'.{did_you_mean(name, known)}")
    return names


def _plot_axis(runs: Sequence[Run], args: argparse.Namespace, metrics: list[str]) -> str | None:
    """The param of `--plot --x` (the one varied param when --x is not given), checked; None for
    `--curves` or no plot. `--curves METRIC` is checked here too."""
    if args.curves and not any(args.curves in r.data.metrics for r in runs):
        raise CompareError(f"--curves: no selected run has a metric '{args.curves}'."
                           f"{did_you_mean(args.curves, all_metrics(runs))}")
    if not args.plot or args.curves:
        return None
    x = args.x
    if x is None:
        varied = varied_params(runs)
        if len(varied) != 1:
            choices = f" (varied: {', '.join(varied)})" if varied else ""
            raise CompareError(f"--plot needs --x PARAM or --curves METRIC{choices}")
        x = varied[0]
    if not any(x in r.data.params for r in runs):
        raise CompareError(f"--x: no run has a param '{x}'.{did_you_mean(x, all_params(runs))}")
    if not metrics:
        raise CompareError("--plot --x: the selected runs have no metrics")
    return x


def _print_importances(client: MlflowClient, parents: Sequence[str]) -> None:
    """A search sweep's parameter importances (framework/search_report.py), below the table, on
    stderr (the table on stdout stays a table)."""
    from framework.search_report import EVALUATOR, logged_importances

    for parent in dict.fromkeys(parents):
        run = client.get_run(parent)
        found = logged_importances(run.data.metrics)
        if found:
            shown = ", ".join(f"{param} {value:.2f}" for param, value in found.items())
            print(f"parameter importances of {run.info.run_name} ({EVALUATOR}, Optuna): {shown}", file=sys.stderr)


def _log_target(client: MlflowClient, selection: Selection, args: argparse.Namespace) -> str | None:
    """The full id of the run to log the artifacts to: `--log-to`, else the parent run when the
    one target is a sweep; None with `--no-log`."""
    if args.no_log:
        return None
    log_to = args.log_to
    if log_to is None and len(set(selection.sweep_parents)) == 1 and len(args.targets) == 1:
        log_to = selection.sweep_parents[0]
    return find_run(client, log_to).info.run_id if log_to else None


def _write_table(runs: Sequence[Run], params: list[str], metrics: list[str], args: argparse.Namespace) -> None:
    header, rows = table_rows(runs, params, metrics, digits=None if args.format == "csv" else 4)
    text = render(header, rows, args.format)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)
        print(f"wrote {args.output} ({len(rows)} runs)", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _log_artifacts(client: MlflowClient, run_id: str, markdown: str, plot: Path | None) -> None:
    """`compare/table.md` and the plot as `compare/<png name>` of the run (overwriting earlier ones)."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "table.md"
        table.write_text(markdown)
        client.log_artifact(run_id, str(table), "compare")
    logged = ["compare/table.md"]
    if plot is not None:
        client.log_artifact(run_id, str(plot), "compare")
        logged.append(f"compare/{plot.name}")
    print(f"logged {', '.join(logged)} to run {run_id}", file=sys.stderr)


def add_parser(subparsers: Any) -> None:
    """Register `exp compare` on the `exp` sub-command parsers."""
    import framework.compare

    c = subparsers.add_parser(
        "compare", help="a table (and plot) of runs: an experiment, a sweep or run ids",
        description="\n\n".join((framework.compare.__doc__ or "").split("\n\n")[:3]),  # the title and the target forms
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("targets", nargs="+", metavar="TARGET",
                   help="an experiment name, sweep:<parent run id>, or a run id (a parent run means its children)")
    c.add_argument("--metrics", help="comma-separated metric keys (default: test/*, else val/*)")
    c.add_argument("--params", help="comma-separated param keys (default: the params that differ across runs)")
    c.add_argument("--format", choices=FORMATS, default="table")
    c.add_argument("-o", "--output", metavar="FILE", help="write the table here instead of stdout")
    c.add_argument("--plot", metavar="PNG", help="write a plot: with --x PARAM or --curves METRIC")
    kind = c.add_mutually_exclusive_group()
    kind.add_argument("--x", metavar="PARAM", help="plot the metrics against this param")
    kind.add_argument("--curves", metavar="METRIC", help="plot this metric's history against step, per run")
    c.add_argument("--log-to", metavar="RUN_ID",
                   help="log the markdown table and the plot as artifacts of this run (default: a sweep's parent)")
    c.add_argument("--no-log", action="store_true", help="log nothing, even for a sweep")
    c.add_argument("--status", type=str.upper, choices=STATUSES, default="FINISHED",
                   help="keep runs with this status (default FINISHED; 'all' for any)")
    c.add_argument("--tracking-uri", help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db")
    c.set_defaults(func=cmd_compare)
