"""An RL run killed mid-training (SIGKILL) resumes to the same numbers: the env's random state
(in the rollouts data module's state_dict), the dense reward's visit counts (task buffers), the
policy and optimizer, torch's RNG (action draws) and the loader's position are all in the resume
checkpoint. specs/dense_reward/tiny_svm.yaml with 12 rollouts, killed before rollout 8."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("torchrl")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/framework"))
from kill_resume import kill_and_resume  # noqa: E402  (one copy of the kill, resume and compare)
SPEC = ROOT / "specs/dense_reward/tiny_svm.yaml"
OVERRIDES = ["data.iterations=12", "data.test_batches=2"]


def test_rl_run_killed_mid_training_resumes_to_the_same_numbers(tracked: str, tmp_path: Path) -> None:
    expected = kill_and_resume(tracked, SPEC, OVERRIDES, tmp_path / "runs", step=7, progress="train/success_rate")
    assert len(expected["train/shaped_return"]) == 12  # every rollout's episode metrics, once


@pytest.mark.slow
def test_the_env_state_is_what_makes_the_resume_exact(tracked: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The same kill and resume with the env's saved random state ignored (the env re-seeded from
    data.seed instead): the resumed run's numbers differ from the uninterrupted run's."""
    from components.rl.data import Rollouts

    monkeypatch.setattr(Rollouts, "load_state_dict", lambda self, state: setattr(self, "_seeded", True))
    with pytest.raises(AssertionError):
        test_rl_run_killed_mid_training_resumes_to_the_same_numbers(tracked, tmp_path)
