"""The plots of `exp compare`: metrics against a swept param, or metric histories against step."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from framework.compare.selection import CompareError
from framework.compare.tables import MISSING, all_metrics, all_params, number, run_label, varied_params
from registry import did_you_mean

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient


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
        raise CompareError(f"--x: no run has a param '{x}'.{did_you_mean(x, all_params(runs))}")
    with_x = [r for r in runs if x in r.data.params]
    values = sorted({r.data.params[x] for r in with_x})
    numeric = all(number(v) is not None for v in values)
    position = {v: number(v) for v in values} if numeric else {v: float(i) for i, v in enumerate(values)}
    others = [p for p in varied_params(with_x) if p != x]
    figure, axes = _figure(title)
    for metric in metrics:
        for label, points in _lines(with_x, x, metric, others, position):
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
        label = metric + (f" ({', '.join(f'{p}={v}' for p, v in zip(others, key))})" if others else "")
        lines.append((label, sorted(points)))
    return lines


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
        raise CompareError(f"--curves: no selected run has a history of '{metric}'."
                           f"{did_you_mean(metric, all_metrics(runs))}")
    axes.set_xlabel("step")
    axes.set_ylabel(metric)
    return _save(figure, axes, path)
