"""`exp compare`: a table (and a plot) of tracked runs, side by side.

Targets, any number of them, each one of:

    cvm_fairness                  an experiment (= a paper slug): its runs; a sweep's parent run is
                                  left out, its children are listed like any other run
    sweep:<parent run id>         the child runs of a sweep (runs tagged mlflow.parentRunId = id)
    <run id>                      one run (32 hex digits, or a unique prefix of 8 or more, as the
                                  table's `id` column prints); a run that has children means them

Runs are listed target by target, each target's runs by start time; a run named twice is listed
once. `--status` (default FINISHED, `all` for any) filters the runs an experiment or a sweep
yields; a run named by its id is always listed.

Columns: run name, short id, status, the chosen params (default: those whose value differs across
the listed runs, leaving out `name`, `description` and `tracking.*`; a run without the param shows
`-`), and the chosen metrics (default: every `test/*` metric, else every `val/*`, else all), each
the run's last value, printed with 4 significant digits (CSV keeps full precision).

    exp compare cvm_fairness
    exp compare sweep:3f2a... --format markdown --output results.md
    exp compare 3f2a... --plot lr.png --x optimizer.lr --metrics test/accuracy,test/demographic_parity_gap
    exp compare 1c0e9b7a 77d2c0f1 --plot curves.png --curves train/loss
    exp compare cvm_fairness --status all --format csv > runs.csv

`--plot PNG --x PARAM` draws each metric against a swept param (numeric values sorted, on a log
axis when positive and spanning 100x or more; other values in sorted order), one line per metric
and per combination of the other varied params. `--plot PNG --curves METRIC` draws the metric's
history against step, one line per run. Without `--x` or `--curves`, a plot is drawn against the
one varied param, if there is exactly one.

`--log-to RUN_ID` logs the PNG and the markdown table as artifacts `compare/<png name>` and
`compare/table.md` of that run (overwriting earlier ones). When the targets are one sweep, its
parent run is the default; `--no-log` turns that off. The MLflow UI remains the place to browse.

Exit codes: 0 ok, 1 no runs selected, 2 an unknown experiment, run, param or metric.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

EXIT_NO_RUNS, EXIT_UNKNOWN = 1, 2
DEFAULT_URI = "sqlite:///mlflow.db"  # same default as framework.tracking (not imported: it pulls Lightning)
PARENT_TAG = "mlflow.parentRunId"
STATUSES = ("FINISHED", "FAILED", "KILLED", "RUNNING", "SCHEDULED", "ALL")
NOISY_PARAMS = ("name", "description")  # the run name is its own column; free text differs always
NOISY_PREFIXES = ("tracking.",)  # where a run was logged, not what it did
TEXT_COLUMNS = ("run", "id", "status")  # never right-aligned, even when they look like numbers
MISSING = "-"
_RUN_ID = re.compile(r"[0-9a-f]{32}")
_RUN_ID_PREFIX = re.compile(r"[0-9a-f]{8,31}")


class CompareError(Exception):
    """A target, param or metric that does not exist; `exit_code` is what `exp compare` returns."""

    def __init__(self, message: str, exit_code: int = EXIT_UNKNOWN) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Selection:
    runs: list[Run]
    sweep_parents: list[str] = field(default_factory=list)  # parent run ids of targets that were sweeps


# --- selecting runs -------------------------------------------------------------------------------


def _search(client: MlflowClient, experiment_ids: list[str], filter_string: str = "") -> list[Run]:
    """Every active run matching the filter (MlflowClient pages at most 1000 at a time)."""
    runs: list[Run] = []
    token = None
    while True:
        page = client.search_runs(experiment_ids, filter_string, max_results=1000, page_token=token)
        runs += page
        token = page.token
        if not token:
            return runs


def _by_start(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_name or "", r.info.run_id))


def _children(client: MlflowClient, parent: Run) -> list[Run]:
    return _search(client, [parent.info.experiment_id], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")


def _experiment_names(client: MlflowClient) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = client.search_experiments(max_results=1000, page_token=token)
        names += [e.name for e in page]
        token = page.token
        if not token:
            return names


def _find_run(client: MlflowClient, run_id: str) -> Run:
    """A run by its full id or a unique prefix (8+ hex digits, as the table prints)."""
    from mlflow.exceptions import MlflowException

    if _RUN_ID.fullmatch(run_id):
        try:
            return client.get_run(run_id)
        except MlflowException:
            raise CompareError(f"no run with id '{run_id}' in {client.tracking_uri}") from None
    experiments = [e.experiment_id for e in client.search_experiments(max_results=1000)]
    matches = _search(client, experiments, f"attributes.run_id LIKE '{run_id}%'") if experiments else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CompareError(f"no run whose id starts with '{run_id}' in {client.tracking_uri}")
    raise CompareError(f"run id prefix '{run_id}' matches {len(matches)} runs; give more digits")


def _unknown_target(client: MlflowClient, target: str) -> CompareError:
    names = _experiment_names(client)
    match = difflib.get_close_matches(target, names, n=1)
    if match:
        hint = f" Did you mean '{match[0]}'?"
    else:
        hint = f" Experiments: {', '.join(sorted(names))}." if names else " The store has no experiments."
    return CompareError(f"no experiment or run named '{target}' in {client.tracking_uri}.{hint}")


def resolve_targets(client: MlflowClient, targets: Sequence[str], status: str = "FINISHED") -> Selection:
    """The runs the targets name (see the module docstring), in order, each once."""
    status = status.upper()
    keep = (lambda run: True) if status == "ALL" else (lambda run: run.info.status == status)
    selected: list[Run] = []
    parents: list[str] = []
    for target in targets:
        if target.startswith("sweep:"):
            parent = _find_run(client, target.removeprefix("sweep:"))
            runs = [r for r in _children(client, parent) if keep(r)]
            parents.append(parent.info.run_id)
        elif _RUN_ID_PREFIX.fullmatch(target) or _RUN_ID.fullmatch(target):
            experiment = client.get_experiment_by_name(target)
            if experiment is not None:  # a hex-looking experiment name wins over a run id prefix
                runs = _experiment_runs(client, experiment.experiment_id, keep)
            else:
                run = _find_run(client, target)
                children = _children(client, run)
                if children:
                    runs = [r for r in children if keep(r)]
                    parents.append(run.info.run_id)
                else:
                    runs = [run]
        else:
            experiment = client.get_experiment_by_name(target)
            if experiment is None or experiment.lifecycle_stage == "deleted":
                raise _unknown_target(client, target)
            runs = _experiment_runs(client, experiment.experiment_id, keep)
        selected += _by_start(runs)
    seen: set[str] = set()
    unique = [r for r in selected if not (r.info.run_id in seen or seen.add(r.info.run_id))]
    return Selection(unique, parents)


def _experiment_runs(client: MlflowClient, experiment_id: str, keep: Any) -> list[Run]:
    runs = _search(client, [experiment_id])
    parents = {r.data.tags[PARENT_TAG] for r in runs if PARENT_TAG in r.data.tags}
    return [r for r in runs if r.info.run_id not in parents and keep(r)]


def select_runs(client: MlflowClient, targets: Sequence[str], status: str = "FINISHED") -> list[Run]:
    """The runs the targets name; raises CompareError for an unknown experiment or run."""
    return resolve_targets(client, targets, status).runs


# --- params, metrics, rows ------------------------------------------------------------------------


def _is_noisy(key: str) -> bool:
    return key in NOISY_PARAMS or key.startswith(NOISY_PREFIXES)


def varied_params(runs: Sequence[Run]) -> list[str]:
    """Params whose value differs across the runs (a missing param counts as a value), sorted."""
    keys = sorted({k for r in runs for k in r.data.params if not _is_noisy(k)})
    return [k for k in keys if len({r.data.params.get(k) for r in runs}) > 1]


def default_metrics(runs: Sequence[Run]) -> list[str]:
    """Every `test/*` metric of the runs, else every `val/*`, else every metric, sorted."""
    keys = sorted({k for r in runs for k in r.data.metrics})
    for prefix in ("test/", "val/"):
        chosen = [k for k in keys if k.startswith(prefix)]
        if chosen:
            return chosen
    return keys


def _format_metric(value: float | None, digits: int | None) -> str:
    if value is None:
        return MISSING
    return repr(float(value)) if digits is None else f"{value:.{digits}g}"


def run_label(run: Run) -> str:
    return run.data.tags.get("mlflow.runName") or run.info.run_name or run.info.run_id[:8]


def table_rows(runs: Sequence[Run], params: Sequence[str], metrics: Sequence[str],
               digits: int | None = 4) -> tuple[list[str], list[list[str]]]:
    """Header and rows: run name, short id, status, the params' values, the metrics' last values
    (`digits` significant digits; None: full precision). A missing value is `-`."""
    header = [*TEXT_COLUMNS, *params, *metrics]
    rows = [
        [run_label(r), r.info.run_id[:8], r.info.status,
         *(r.data.params.get(p, MISSING) for p in params),
         *(_format_metric(r.data.metrics.get(m), digits) for m in metrics)]
        for r in runs
    ]
    return header, rows


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _numeric_columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[bool]:
    numeric = []
    for i, name in enumerate(header):
        values = [row[i] for row in rows if row[i] != MISSING]
        numeric.append(name not in TEXT_COLUMNS and bool(values) and all(_number(v) is not None for v in values))
    return numeric


def render(header: Sequence[str], rows: Sequence[Sequence[str]], fmt: str = "table") -> str:
    """`table`: aligned plain text; `markdown`: a GitHub table; `csv`. Numeric columns are
    right-aligned (in markdown with `---:`). The text ends with a newline."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()
    if fmt not in ("table", "markdown"):
        raise ValueError(f"fmt must be one of table, markdown, csv; got {fmt!r}")
    if fmt == "markdown":
        header = [h.replace("|", r"\|") for h in header]
        rows = [[c.replace("|", r"\|") for c in row] for row in rows]
    numeric = _numeric_columns(header, rows)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    if fmt == "markdown":
        widths = [max(w, 4) for w in widths]  # room for the `---:` rule

    def line(cells: Sequence[str]) -> list[str]:
        return [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)]

    if fmt == "table":
        rule = ["-" * w for w in widths]
        return "".join("  ".join(line(cells)).rstrip() + "\n" for cells in [header, rule, *rows])
    rule = [("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric)]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in [line(header), rule, *map(line, rows)])


# --- plots ----------------------------------------------------------------------------------------


def _figure(title: str | None) -> Any:
    # A bare Figure (no pyplot): no global backend state; savefig writes PNG through Agg.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5), layout="constrained")
    axes = figure.add_subplot()
    if title:
        axes.set_title(title)
    return figure, axes


def _save(figure: Any, axes: Any, path: str | Path) -> Path:
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    axes.grid(True, alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, format="png")
    return path


def plot_vs_param(runs: Sequence[Run], x: str, metrics: Sequence[str], path: str | Path,
                  title: str | None = None) -> Path:
    """Each metric's last value against param `x`: one line per metric and per combination of
    the other varied params. Numeric `x` is sorted (log axis when positive and spanning >= 100x);
    other values are placed in sorted order. Runs lacking `x` or a metric are skipped."""
    if not any(x in r.data.params for r in runs):
        raise CompareError(f"--x: no run has a param '{x}'.{_did_you_mean(x, _all_params(runs))}")
    with_x = [r for r in runs if x in r.data.params]
    values = sorted({r.data.params[x] for r in with_x})
    numeric = all(_number(v) is not None for v in values)
    position = {v: _number(v) for v in values} if numeric else {v: float(i) for i, v in enumerate(values)}
    others = [p for p in varied_params(with_x) if p != x]
    figure, axes = _figure(title)
    for metric in metrics:
        groups: dict[tuple[str, ...], list[tuple[float, float]]] = {}
        for run in with_x:
            if metric in run.data.metrics:
                key = tuple(run.data.params.get(p, MISSING) for p in others)
                groups.setdefault(key, []).append((position[run.data.params[x]], run.data.metrics[metric]))
        for key, points in sorted(groups.items()):
            points.sort()
            label = metric + (f" ({', '.join(f'{p}={v}' for p, v in zip(others, key))})" if others else "")
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    if numeric:
        xs = [v for v in position.values() if v is not None]
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 100:
            axes.set_xscale("log")
    else:
        axes.set_xticks(list(position.values()), values, rotation=30 if len(values) > 5 else 0)
    axes.set_xlabel(x)
    axes.set_ylabel(metrics[0] if len(metrics) == 1 else "last value")
    return _save(figure, axes, path)


def plot_curves(client: MlflowClient, runs: Sequence[Run], metric: str, path: str | Path,
                title: str | None = None) -> Path:
    """The metric's history against step, one line per run (labelled by its varied params, else
    by name and short id). Runs without that history are skipped."""
    varied = varied_params(runs)
    figure, axes = _figure(title)
    drawn = 0
    for run in runs:
        history = sorted(client.get_metric_history(run.info.run_id, metric), key=lambda m: (m.step, m.timestamp))
        if not history:
            continue
        if varied:
            label = ", ".join(f"{p}={run.data.params.get(p, MISSING)}" for p in varied)
        else:
            label = f"{run_label(run)} {run.info.run_id[:8]}"
        axes.plot([m.step for m in history], [m.value for m in history], label=label)
        drawn += 1
    if not drawn:
        keys = sorted({k for r in runs for k in r.data.metrics})
        raise CompareError(f"--curves: no selected run has a history of '{metric}'.{_did_you_mean(metric, keys)}")
    axes.set_xlabel("step")
    axes.set_ylabel(metric)
    return _save(figure, axes, path)


# --- the command ----------------------------------------------------------------------------------


def _all_params(runs: Sequence[Run]) -> list[str]:
    return sorted({k for r in runs for k in r.data.params})


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, choices, n=1)
    return f" Did you mean '{match[0]}'?" if match else ""


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _check_names(what: str, names: Sequence[str], known: Sequence[str]) -> None:
    for name in names:
        if name not in known:
            raise CompareError(f"--{what}: no selected run has a {what[:-1]} '{name}'.{_did_you_mean(name, known)}")


def _tracking_uri(arg: str | None) -> str:
    uri = arg or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI
    # MLflow would create an empty store at a mistyped path (and then report no experiments).
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
        raise CompareError(f"no MLflow store at {uri}: run `exp run SPEC` here first, or pass "
                           f"--tracking-uri (or set MLFLOW_TRACKING_URI)")
    return uri


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        return _compare(args)
    except CompareError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


def _compare(args: argparse.Namespace) -> int:
    from mlflow.tracking import MlflowClient

    if (args.x or args.curves) and not args.plot:
        raise CompareError("--x and --curves need --plot PNG")
    client = MlflowClient(tracking_uri=_tracking_uri(args.tracking_uri))
    selection = resolve_targets(client, args.targets, args.status)
    runs = selection.runs
    if not runs:
        status = "" if args.status.upper() == "ALL" else f" with status {args.status.upper()} (--status all for any)"
        raise CompareError(f"no runs selected by {' '.join(args.targets)}{status}", EXIT_NO_RUNS)

    metrics = _split(args.metrics)
    if metrics is None:
        metrics = default_metrics(runs)
    _check_names("metrics", metrics, sorted({k for r in runs for k in r.data.metrics}))
    params = _split(args.params)
    if params is None:
        params = varied_params(runs)
    _check_names("params", params, _all_params(runs))

    x = args.x
    if args.plot and not args.curves:  # settled before any output, so a mistake prints only the error
        if x is None:
            varied = varied_params(runs)
            if len(varied) != 1:
                choices = f" (varied: {', '.join(varied)})" if varied else ""
                raise CompareError(f"--plot needs --x PARAM or --curves METRIC{choices}")
            x = varied[0]
        if not any(x in r.data.params for r in runs):
            raise CompareError(f"--x: no run has a param '{x}'.{_did_you_mean(x, _all_params(runs))}")
        if not metrics:
            raise CompareError("--plot --x: the selected runs have no metrics")
    if args.curves and not any(args.curves in r.data.metrics for r in runs):
        keys = sorted({k for r in runs for k in r.data.metrics})
        raise CompareError(f"--curves: no selected run has a metric '{args.curves}'.{_did_you_mean(args.curves, keys)}")
    log_to = args.log_to
    if log_to is None and not args.no_log and len(set(selection.sweep_parents)) == 1 and len(args.targets) == 1:
        log_to = selection.sweep_parents[0]
    log_to = _find_run(client, log_to).info.run_id if log_to and not args.no_log else None

    header, rows = table_rows(runs, params, metrics, digits=None if args.format == "csv" else 4)
    text = render(header, rows, args.format)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)
        print(f"wrote {args.output} ({len(rows)} runs)", file=sys.stderr)
    else:
        sys.stdout.write(text)

    plot = None
    if args.plot:
        plot = (plot_curves(client, runs, args.curves, args.plot) if args.curves
                else plot_vs_param(runs, x, metrics, args.plot))
        print(f"wrote {plot}", file=sys.stderr)

    if log_to:
        markdown = render(*table_rows(runs, params, metrics), "markdown")
        with tempfile.TemporaryDirectory() as tmp:
            table = Path(tmp) / "table.md"
            table.write_text(markdown)
            client.log_artifact(log_to, str(table), "compare")
        logged = ["compare/table.md"]
        if plot is not None:
            client.log_artifact(log_to, str(plot), "compare")
            logged.append(f"compare/{plot.name}")
        print(f"logged {', '.join(logged)} to run {log_to}", file=sys.stderr)
    return 0


def add_parser(subparsers: Any) -> None:
    """Register `exp compare` on the `exp` sub-command parsers."""
    c = subparsers.add_parser(
        "compare", help="a table (and plot) of runs: an experiment, a sweep or run ids",
        description="\n\n".join(__doc__.split("\n\n")[:3]),  # the title and the target forms
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("targets", nargs="+", metavar="TARGET",
                   help="an experiment name, sweep:<parent run id>, or a run id (a parent run means its children)")
    c.add_argument("--metrics", help="comma-separated metric keys (default: test/*, else val/*)")
    c.add_argument("--params", help="comma-separated param keys (default: the params that differ across runs)")
    c.add_argument("--format", choices=("table", "markdown", "csv"), default="table")
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
