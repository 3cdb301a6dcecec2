"""An off-policy RL run killed mid-training (SIGKILL) resumes to the same numbers: besides what
the on-policy resume keeps (weights, optimizer, torch's and the env's random state, the loader's
position), the replay buffer's episodes and write cursor (the task's on_save_checkpoint) and the
target critic are in the resume checkpoint. specs/macrl/tiny_sac_her.yaml (SAC + HER) with 6
rollouts of 8 episodes, killed before rollout 4. The kill, resume and comparison are
tests/framework/kill_resume.py's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("torchrl")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests/framework"))
from kill_resume import kill_and_resume  # noqa: E402  (one copy of the kill, resume and compare)

SPEC = ROOT / "specs/macrl/tiny_sac_her.yaml"
OVERRIDES = ["data.iterations=6", "data.test_batches=1", "data.env.num_envs=8", "task.updates=5",
             "task.batch_size=32", "optimizer.lr=0.01"]


def test_off_policy_run_killed_mid_training_resumes_to_the_same_numbers(tracked: str, tmp_path: Path) -> None:
    expected = kill_and_resume(tracked, SPEC, OVERRIDES, tmp_path / "runs", step=3, progress="train/success_rate")
    assert len(expected["train/critic_loss"]) == 6  # every rollout's metrics and losses, once


@pytest.mark.slow
def test_the_replay_buffer_state_is_what_makes_the_resume_exact(tracked: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The same kill and resume with the saved buffer ignored (the resumed run starts with an empty
    buffer): its numbers differ from the uninterrupted run's. The kill runs in a subprocess, the
    resume here, so the patch only affects the resume."""
    from components.rl.offpolicy import OffPolicy

    monkeypatch.setattr(OffPolicy, "on_load_checkpoint", lambda self, checkpoint: None)
    with pytest.raises(AssertionError):
        test_off_policy_run_killed_mid_training_resumes_to_the_same_numbers(tracked, tmp_path)
