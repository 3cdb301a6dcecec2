"""An `optuna:` search sweep's draws: the sampler and pruner a spec names, one drawn value per
`sweep.optuna.params` entry, and the Lightning callback through which a trial's run reports its
metric to the pruner (framework/queue_worker.py takes the trials; framework/queue.py holds them)."""

from __future__ import annotations

import json
from typing import Any

# A search trial's run says it was pruned in this tag.
PRUNED_TAG = "expspec.pruned"


def make_sampler(name: str, seed: int, number: int) -> Any:
    """The sampler of a search sweep for trial `number`: seeded with (seed, number), so that two
    workers never draw the same values from the same history (QMC: one scramble seed for all,
    its point's index comes from the storage)."""
    import optuna

    per_trial = seed * 1_000_003 + number
    if name == "random":
        return optuna.samplers.RandomSampler(seed=per_trial)
    if name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=per_trial)
    return optuna.samplers.TPESampler(seed=per_trial)


def make_pruner(name: str) -> Any:
    import optuna

    return {"median": optuna.pruners.MedianPruner, "successive_halving": optuna.pruners.SuccessiveHalvingPruner,
            "hyperband": optuna.pruners.HyperbandPruner}.get(name, optuna.pruners.NopPruner)()


def suggest(trial: Any, key: str, dist: dict[str, Any]) -> Any:
    """Draw one `sweep.optuna.params` entry (a `framework.spec.Distribution`)."""
    kind = dist["distribution"]
    if kind == "choice":
        return trial.suggest_categorical(key, dist["values"])
    if kind == "int_uniform":
        return trial.suggest_int(key, int(dist["low"]), int(dist["high"]))
    return trial.suggest_float(key, dist["low"], dist["high"], log=kind == "log_uniform")


def pruning_callback(optuna_trial: str | None) -> Any | None:
    """In a search trial's run whose sweep has a pruner (`optuna_trial`: the run context's, set
    by the worker, framework/invocation.py): a Lightning callback that reports the sweep's metric to the Optuna trial after each
    validation, and stops training when the pruner says so (the run then tests and ends
    FINISHED, tagged `expspec.pruned`; the worker records the trial PRUNED). Else None."""
    if not optuna_trial:
        return None
    import lightning.pytorch as pl

    from framework.queue import open_storage

    config = json.loads(optuna_trial)

    class OptunaPruning(pl.Callback):
        def __init__(self) -> None:
            import optuna

            study = optuna.load_study(study_name=config["study"], storage=open_storage(config["url"]),
                                      pruner=make_pruner(config["pruner"]))
            self.trial = optuna.Trial(study, config["trial_id"])

        def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
            value = trainer.callback_metrics.get(config["metric"])
            if value is None or trainer.sanity_checking or not trainer.is_global_zero:
                return
            self.trial.report(float(value), step=trainer.global_step)
            if self.trial.should_prune():
                trainer.should_stop = True
                run_id = getattr(trainer.logger, "run_id", None)
                if run_id:
                    trainer.logger.experiment.set_tag(run_id, PRUNED_TAG, f"at step {trainer.global_step}: "
                                                      f"{config['metric']}={float(value):.6g}")

    return OptunaPruning()
