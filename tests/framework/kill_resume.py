"""Killing a run with SIGKILL at a training step and resuming it: what the resume tests of the
framework (test_resume.py) and of the families (RL, motor) share. Not a test module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

# Kills itself with SIGKILL (no clean-up of any kind) before the train batch after `step`
# optimizer steps (a deterministic point between two resume checkpoints), or with step None at
# the first test batch, after fit ended.
KILL_AT = """
import os, signal, sys
from lightning.pytorch.callbacks import Callback
import framework.runner as runner

class KillAt(Callback):
    def on_train_batch_start(self, trainer, *args):
        if trainer.global_step == {step}:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_test_batch_start(self, trainer, *args):
        if {step} is None:
            os.kill(os.getpid(), signal.SIGKILL)

add = runner.with_resume_checkpoint
runner.with_resume_checkpoint = lambda callbacks, kwargs: [*add(callbacks, kwargs), KillAt()]
from framework.cli import main
sys.exit(main(sys.argv[1:]))
"""


def killed_at(spec: Path, step: int | None, overrides: list[str], runs: Path) -> str:
    """Run `spec` in a process that SIGKILLs itself at `step`; the id of its run. Its metrics are
    written at every logging step (not buffered), so that the run holds steps past its last
    checkpoint when it dies, which the resumed run logs again and must not duplicate."""
    before = set(runs.glob("*/*"))
    done = subprocess.run([sys.executable, "-c", KILL_AT.format(step=step), "run", str(spec), *overrides],
                          capture_output=True, text=True, env={**os.environ, "EXPSPEC_METRICS_FLUSH_SECONDS": "0",
                                                                      "EXPSPEC_RESUME_MIN_SECONDS": "0"},
                          timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    (folder,) = set(runs.glob("*/*")) - before
    return folder.name


def metric_history(client: MlflowClient, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """Every logged value of every metric, as (step, value), in step order; system metrics (the
    machine's load while the run trained, framework/run_context.py) left out."""
    keys = [k for k in client.get_run(run_id).data.metrics if not k.startswith("system/")]
    return {k: sorted((m.step, m.value) for m in client.get_metric_history(run_id, k)) for k in keys}


def resumed_as_uninterrupted(client: MlflowClient, reference: Any, run_id: str) -> dict[str, list[tuple[int, float]]]:
    """Resume the killed run `run_id`; it must end FINISHED with the test metrics and the whole
    metric history of the uninterrupted `reference` run. The history, for further checks."""
    from framework.resume import resume

    resumed = resume(run_id)
    assert resumed.run_id == run_id
    assert client.get_run(run_id).info.status == "FINISHED"
    tests = {k: v for k, v in reference.metrics.items() if k.startswith("test/")}
    assert tests and {k: resumed.metrics[k] for k in tests} == tests
    expected, got = metric_history(client, reference.run_id), metric_history(client, run_id)
    assert got == expected  # each step once, same values, none shifted
    return expected


def kill_and_resume(tracked: str, spec: Path, overrides: list[str], runs: Path, step: int,
                    progress: str) -> dict[str, list[tuple[int, float]]]:
    """Run `spec` uninterrupted, then again killed before optimizer step `step` (after it logged
    `progress` past a checkpoint, before any test metric), resume it, and compare
    (`resumed_as_uninterrupted`). The uninterrupted run's metric history."""
    from framework.runner import run

    client = MlflowClient(tracked)
    reference = run(spec, overrides)
    run_id = killed_at(spec, step, overrides, runs)
    killed = metric_history(client, run_id)
    assert max(s for s, _ in killed[progress]) >= step - 1  # it trained past a checkpoint
    assert not any(k.startswith("test/") for k in killed)
    return resumed_as_uninterrupted(client, reference, run_id)
