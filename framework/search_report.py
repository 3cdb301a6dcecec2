"""What a finished search sweep (`sweep: {optuna: ...}`) says about its parameters, written on
its parent run with Optuna's own modules:

- the parameter importances, Optuna's fANOVA evaluator (seeded, so a re-run of the report gives
  the same numbers), as metrics `importance/<param>` (they sum to 1);
- Optuna's matplotlib plots of those importances and of the optimization history, as the
  artifacts `search/param_importances.png` and `search/optimization_history.png`.

`exp compare` of the parent prints the importances (framework/compare). Written when the queue
is drained (framework/queue.py), by the worker that ends the parent run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

IMPORTANCE_PREFIX = "importance/"
ARTIFACT_DIR = "search"
EVALUATOR = "fANOVA"
MIN_TRIALS = 2  # importances need trials that differ


def importances(study: Any) -> dict[str, float]:
    """param -> importance (fANOVA, seed 0) over the study's complete trials; {} with too few."""
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances
    from optuna.trial import TrialState

    if len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) < MIN_TRIALS:
        return {}
    return dict(get_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=0)))


def plots(study: Any, metric: str, folder: Path) -> list[Path]:
    """Optuna's importance and optimization-history plots of the study, as PNG files in `folder`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna.visualization.matplotlib as optuna_plots
    from optuna.importance import FanovaImportanceEvaluator

    drawn = {
        "param_importances.png": lambda: optuna_plots.plot_param_importances(
            study, evaluator=FanovaImportanceEvaluator(seed=0), target_name=metric),
        "optimization_history.png": lambda: optuna_plots.plot_optimization_history(study, target_name=metric),
    }
    written = []
    for name, draw in drawn.items():
        axes = draw()
        figure = axes.figure
        figure.set_size_inches(6.4, 4.0)
        figure.tight_layout()
        figure.savefig(folder / name, dpi=80, metadata={"Software": None})  # no version stamp: deterministic
        plt.close(figure)
        written.append(folder / name)
    return written


def report(study: Any, client: Any, parent_run_id: str, metric: str) -> dict[str, float]:
    """Log the study's importances and plots on the parent run; returns the importances."""
    from mlflow.entities import Metric

    found = importances(study)
    if not found:
        return found
    now = int(time.time() * 1000)
    client.log_batch(parent_run_id, metrics=[Metric(f"{IMPORTANCE_PREFIX}{p}", v, now, 0) for p, v in found.items()])
    client.set_tag(parent_run_id, "expspec.importance_evaluator", EVALUATOR)
    with tempfile.TemporaryDirectory(prefix="expspec-search-") as folder:
        for path in plots(study, metric, Path(folder)):
            client.log_artifact(parent_run_id, str(path), ARTIFACT_DIR)
    return found


def logged_importances(metrics: dict[str, float]) -> dict[str, float]:
    """The importances a run holds (its `importance/*` metrics), largest first."""
    found = {k.removeprefix(IMPORTANCE_PREFIX): v for k, v in metrics.items() if k.startswith(IMPORTANCE_PREFIX)}
    return dict(sorted(found.items(), key=lambda item: -item[1]))
