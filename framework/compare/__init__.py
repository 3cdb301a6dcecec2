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
axis when positive and spanning more than 10x; other values in sorted order), one panel per metric,
one line per combination of the other varied params. `--plot PNG --curves METRIC` draws the metric's
history against step, one line per run. Without `--x` or `--curves`, a plot is drawn against the
one varied param, if there is exactly one.

`--log-to RUN_ID` logs the PNG and the markdown table as artifacts `compare/<png name>` and
`compare/table.md` of that run (overwriting earlier ones). When the targets are one sweep, its
parent run is the default; `--no-log` turns that off. The MLflow UI remains the place to browse.

Exit codes: 0 ok, 1 no runs selected, 2 an unknown experiment, run, param or metric.

Modules: `selection` (targets -> runs), `tables` (columns and rendering), `plots`, `command`
(the arguments and the steps of the command).
"""

from framework.compare.command import add_parser, cmd_compare, compare, store_uri
from framework.compare.plots import plot_curves, plot_vs_param
from framework.compare.selection import (
    EXIT_NO_RUNS, EXIT_UNKNOWN, PARENT_TAG, STATUSES, CompareError, Selection, find_run, resolve_targets,
    search_runs, select_runs,
)
from framework.compare.tables import MISSING, default_metrics, render, run_label, table_rows, varied_params

__all__ = [
    "EXIT_NO_RUNS", "EXIT_UNKNOWN", "MISSING", "PARENT_TAG", "STATUSES", "CompareError", "Selection",
    "add_parser", "cmd_compare", "compare", "default_metrics", "find_run", "plot_curves", "plot_vs_param",
    "render", "resolve_targets", "run_label", "search_runs", "select_runs", "store_uri", "table_rows",
    "varied_params",
]
