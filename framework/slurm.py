"""`exp sweep SPEC --launcher slurm`: a sweep's trials as one SLURM job array, through submitit.

- The sweep is planned and validated, its MLflow parent run opened (or reused) and the trials
  with a FINISHED run of their spec hash skipped, as `exp sweep` does; the others are submitted
  as one job array (`submitit.AutoExecutor`, parameters from `--slurm KEY=VALUE`, e.g.
  `slurm_partition=gpu timeout_min=240 gpus_per_node=1 slurm_array_parallelism=8`) and the
  command exits: it does not wait for the array (Hydra's launcher blocks, hydra #2479). The state
  of each trial is its MLflow run's (a failed job is a FAILED run, never "completed", hydra
  #1928); running the command again skips what finished and submits the rest.
- Each array task runs its trial in-process (`TrialJob`) as a child run of the parent, tagged
  with its job id (`expspec.slurm.job`). SLURM's pre-emption or time-limit signal (submitit's
  SIGUSR2) requeues the task (submitit's checkpointing); the run is marked KILLED as the process
  exits. The requeued task keeps its job id, finds its run by that tag and continues it, from the
  run's last resume checkpoint (`exp resume`; from its start when it had none): the same run,
  no second one, and no param logged again (MLflow params are write-once, mlflow #7152).
- The task that finishes the last trial ends the parent run FINISHED.
- `--launcher submitit-local` runs the same array with submitit's local executor (processes on
  this machine): how it is tested here. Logs and submitit's files go to `.expspec/slurm/`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from framework.errors import UsageError
from framework.queue import need

LAUNCHERS = {"slurm": "slurm", "submitit-local": "local"}
JOB_TAG = "expspec.slurm.job"


def executor_options(pairs: list[str]) -> dict[str, Any]:
    """`--slurm KEY=VALUE` pairs as submitit executor parameters (values read as YAML)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--slurm {pair}: expected KEY=VALUE, e.g. slurm_partition=gpu or timeout_min=240")
        options[key.strip()] = yaml.safe_load(value)
    return options


def submit_sweep(spec_path: str | Path, overrides: list[str], launcher: str, options: dict[str, Any],
                 echo: Any = print) -> list[Any]:
    """Submit the sweep's unfinished trials as one job array; the submitit jobs (see the module docstring)."""
    submitit = need("submitit")
    from framework.result_cache import cache_dir
    from framework.sweep_plan import SweepPlan
    from framework.sweep_runs import link_skipped, open_parent, skip_finished

    if launcher not in LAUNCHERS:
        raise UsageError(f"--launcher {launcher}: expected one of {', '.join(LAUNCHERS)}")
    plan = SweepPlan(spec_path, overrides)
    if plan.optuna:
        raise UsageError("an optuna search draws its trials as they are taken: on SLURM, start workers with "
                         "`srun exp sweep SPEC --queue postgresql://...` (README, Team / cluster)")
    tracker, done = open_parent(spec_path, overrides, plan.base, plan.hashes)
    parent = tracker.run_id
    tracker.client.delete_tag(parent, "expspec.pid")  # the parent outlives this process: never an orphan
    outcomes, todo = skip_finished(plan.trials, plan.hashes, done, echo)
    link_skipped(tracker.client, parent, outcomes, echo)
    if not todo:
        tracker.finish()
        echo(f"sweep {plan.base['name']}: every trial finished; parent run {parent}")
        return []
    executor = submitit.AutoExecutor(folder=str((cache_dir().parent / "slurm" / "%j").resolve()),
                                     cluster=LAUNCHERS[launcher])
    executor.update_parameters(name=f"expspec-{plan.base['name']}", **options)
    arguments = [(str(Path(spec_path).resolve()), [*overrides, *plan.trials[i].overrides], parent,
                  plan.trials[i].name, plan.hashes) for i in todo]
    jobs = executor.map_array(TrialJob(), *zip(*arguments))
    tracker.client.set_tag(parent, "expspec.slurm.jobs", " ".join(job.job_id for job in jobs)[:5000])
    for i, job in zip(todo, jobs):
        echo(f"[submitted] {plan.trials[i].name}: job {job.job_id}")
    echo(f"sweep {plan.base['name']}: {len(jobs)} trial(s) submitted as a job array, {len(outcomes)} finished "
         f"before; parent run {parent}. Each trial's state is its MLflow run's: exp compare {parent}")
    return jobs


def _job_id() -> str:
    submitit = need("submitit")
    return str(submitit.JobEnvironment().job_id)


class TrialJob:
    """One trial in one array task (picklable: submitit sends it to the task). `checkpoint` is
    submitit's hook on the pre-emption signal: it requeues this same call (the run continues,
    see the module docstring)."""

    def __call__(self, spec_path: str, overrides: list[str], parent: str, name: str, hashes: list[str]) -> dict:
        from framework.invocation import RunContext, no_mlflow_telemetry, pin_cpu_numerics, use

        pin_cpu_numerics()  # a task is a process of its own: before torch first computes
        no_mlflow_telemetry()
        job = _job_id()
        context = RunContext.from_environ().for_other_run()  # the stores the task was started with
        with use(context):
            return self._run(context.but(parent_run_id=parent, run_name=name, run_tags={JOB_TAG: job}),
                             spec_path, overrides, hashes)

    def _run(self, context: Any, spec_path: str, overrides: list[str], hashes: list[str]) -> dict:
        from framework.result_cache import RunResult
        from framework.resume import resume
        from framework.runner import run
        from framework.tracking import client

        parent, job = context.parent_run_id, context.run_tags[JOB_TAG]
        mlflow_client = client()
        experiment = mlflow_client.get_run(parent).info.experiment_id
        earlier = mlflow_client.search_runs([experiment], f"tags.`{JOB_TAG}` = '{job}'", max_results=1)
        if earlier and earlier[0].info.status == "FINISHED":
            result = RunResult(earlier[0].info.run_id, dict(earlier[0].data.metrics))
        elif earlier:  # this task was requeued: continue its run
            result = resume(earlier[0].info.run_id, from_start=True)
        else:
            result = run(spec_path, overrides, context)
        end_parent_when_done(mlflow_client, experiment, parent, hashes)
        return {"run_id": result.run_id, "metrics": result.metrics}

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        submitit = need("submitit")
        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def end_parent_when_done(mlflow_client: Any, experiment: str, parent: str, hashes: list[str]) -> None:
    """End the parent run FINISHED once every trial hash has a FINISHED child run."""
    children = mlflow_client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{parent}' and "
                                         "attributes.status = 'FINISHED'", max_results=5000)
    if set(hashes) <= {c.data.tags.get("expspec.spec_hash") for c in children}:
        mlflow_client.set_terminated(parent, "FINISHED")
