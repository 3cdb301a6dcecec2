"""The plots of `exp compare`: metrics against a swept param, or metric histories against step."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from framework.compare.selection import CompareError, did_you_mean
from framework.compare.tables import MISSING, all_metrics, all_params, number, run_label, varied_params

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient


# A log x axis when the swept values are positive and the largest is more than this times the smallest.
LOG_SPAN = 10.0


def _figure(title: str | None, panels: int = 1) -> tuple[Any, list[Any]]:
    """A bare Figure (no pyplot: no global backend state; savefig writes PNG through Agg) with
    `panels` axes side by side, at most three a row."""
    from matplotlib.figure import Figure

    columns = min(panels, 3)
    rows = -(-panels // columns)
    figure = Figure(figsize=(4.2 * columns if panels > 1 else 7, 3.6 * rows if panels > 1 else 4.5),
                    layout="constrained")
    axes = list(figure.subplots(rows, columns, squeeze=False).flat)
    for extra in axes[panels:]:
        extra.set_visible(False)
    if title:
        figure.suptitle(title)
    return figure, axes[:panels]


def _save(figure: Any, axes: Sequence[Any], path: str | Path) -> Path:
    for panel in axes:
        if panel.get_legend_handles_labels()[0]:
            panel.legend(fontsize="small")
        panel.grid(True, alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, format="png")
    return path


def log_axis(values: Sequence[float | None]) -> bool:
    """Whether numeric x values read best on a log axis: all positive, spanning more than LOG_SPAN."""
    xs = [v for v in values if v is not None]
    return bool(xs) and min(xs) > 0 and max(xs) / min(xs) > LOG_SPAN


def plot_vs_param(runs: Sequence[Run], x: str, metrics: Sequence[str], path: str | Path,
                  title: str | None = None) -> Path:
    """Each metric's last value against param `x`, one panel per metric (metrics have their own
    scales), one line per combination of the other varied params. Numeric `x` is sorted, on a
    log axis when positive and spanning more than LOG_SPAN (10x); other values are placed in
    sorted order. Runs lacking `x` or a metric are skipped."""
    if not any(x in r.data.params for r in runs):
        raise CompareError(f"--x: no run has a param '{x}'.{did_you_mean(x, all_params(runs))}")
    with_x = [r for r in runs if x in r.data.params]
    values = sorted({r.data.params[x] for r in with_x})
    numeric = all(number(v) is not None for v in values)
    position = {v: number(v) for v in values} if numeric else {v: float(i) for i, v in enumerate(values)}
    others = [p for p in varied_params(with_x) if p != x]
    figure, axes = _figure(title, len(metrics))
    for panel, metric in zip(axes, metrics):
        for label, points in _lines(with_x, x, metric, others, position):
            panel.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        if numeric and log_axis(list(position.values())):
            panel.set_xscale("log")
        elif not numeric:
            panel.set_xticks(list(position.values()), values, rotation=30 if len(values) > 5 else 0)
        panel.set_xlabel(x)
        panel.set_ylabel(metric)
    return _save(figure, axes, path)


def _lines(runs: Sequence[Run], x: str, metric: str, others: list[str],
           position: dict[str, Any]) -> list[tuple[str, list[tuple[float, float]]]]:
    """(label, points sorted by x) per combination of the `others` params' values, for one metric."""
    groups: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    for run in runs:
        if metric in run.data.metrics:
            key = tuple(run.data.params.get(p, MISSING) for p in others)
            groups.setdefault(key, []).append((position[run.data.params[x]], run.data.metrics[metric]))
    lines = []
    for key, points in sorted(groups.items()):
        label = ", ".join(f"{p}={v}" for p, v in zip(others, key)) if others else ""
        lines.append((label, sorted(points)))
    return lines


def plot_curves(client: MlflowClient, runs: Sequence[Run], metric: str, path: str | Path,
                title: str | None = None) -> Path:
    """The metric's history against step, one line per run (labelled by its varied params, else
    by name and short id). Runs without that history are skipped."""
    varied = varied_params(runs)
    figure, (axes,) = _figure(title)
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
        raise CompareError(f"--curves: no selected run has a history of '{metric}'."
                           f"{did_you_mean(metric, all_metrics(runs))}")
    axes.set_xlabel("step")
    axes.set_ylabel(metric)
    return _save(figure, [axes], path)
