"""An RL run killed mid-training (SIGKILL) resumes to the same numbers: the env's random state
(in the rollouts data module's state_dict), the dense reward's visit counts (task buffers), the
policy and optimizer, torch's RNG (action draws) and the loader's position are all in the resume
checkpoint. specs/dense_reward/tiny_svm.yaml with 12 rollouts, killed before rollout 8."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.resume import resume
from framework.runner import run

pytest.importorskip("gymnasium")
pytest.importorskip("torchrl")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/framework"))
from test_resume import KILL_AT  # noqa: E402  (kills `exp run` at a step; one copy, shared)
SPEC = ROOT / "specs/dense_reward/tiny_svm.yaml"
OVERRIDES = ["data.iterations=12", "data.test_batches=2"]


def _history(client: MlflowClient, run_id: str) -> dict[str, list[tuple[int, float]]]:
    keys = [k for k in client.get_run(run_id).data.metrics if not k.startswith("system/")]
    return {k: sorted((m.step, m.value) for m in client.get_metric_history(run_id, k)) for k in keys}


def test_rl_run_killed_mid_training_resumes_to_the_same_numbers(tracked: str, tmp_path: Path) -> None:
    client = MlflowClient(tracked)
    reference = run(SPEC, OVERRIDES)
    runs = tmp_path / "runs"
    before = set(runs.glob("*/*"))
    done = subprocess.run([sys.executable, "-c", KILL_AT.format(step=7), "run", str(SPEC), *OVERRIDES],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EXPSPEC_METRICS_FLUSH_SECONDS": "0", "EXPSPEC_RESUME_MIN_SECONDS": "0"})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    (folder,) = set(runs.glob("*/*")) - before
    run_id = folder.name
    killed = _history(client, run_id)
    assert max(s for s, _ in killed["train/success_rate"]) >= 6  # it trained past a checkpoint
    assert not any(k.startswith("test/") for k in killed)
    resumed = resume(run_id)
    assert client.get_run(run_id).info.status == "FINISHED"
    tests = {k: v for k, v in reference.metrics.items() if k.startswith("test/")}
    assert tests and {k: resumed.metrics[k] for k in tests} == tests
    expected, got = _history(client, reference.run_id), _history(client, run_id)
    assert got == expected  # every rollout's episode metrics once, same values, none shifted
    assert len(expected["train/shaped_return"]) == 12


@pytest.mark.slow
def test_the_env_state_is_what_makes_the_resume_exact(tracked: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The same kill and resume with the env's saved random state ignored (the env re-seeded from
    data.seed instead): the resumed run's numbers differ from the uninterrupted run's."""
    from components.rl.data import Rollouts

    monkeypatch.setattr(Rollouts, "load_state_dict", lambda self, state: setattr(self, "_seeded", True))
    with pytest.raises(AssertionError):
        test_rl_run_killed_mid_training_resumes_to_the_same_numbers(tracked, tmp_path)
