"""minchange_edit's specs end to end at a shrunk size: the editor trains in a world trained by its
upstream spec (one per seed), and logs the metrics its claims read."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

SPECS = Path(__file__).resolve().parents[2] / "specs/minchange_edit"
# a 40-step world on 400 images, 10 policy updates: the wiring, not the numbers
SHRUNK = ["data.num_samples=400", "trainer.max_steps=10",
          "init.overrides=['seed=${seed}', 'trainer.max_steps=40', 'data.num_samples=400']"]


@pytest.mark.parametrize("spec", ["minchange.yaml", "l1.yaml"])
def test_shrunk_editor_runs_in_its_seeds_world(spec: str, tracked: str) -> None:
    result = run(SPECS / spec, SHRUNK)
    metrics = result.metrics
    for name in ("edit_success", "unintended_rate", "outside_mask_change"):
        assert 0.0 <= metrics[f"test/{name}"] <= 1.0, name
    assert metrics["test/latent_l1"] > 0  # the mean edit moved away from the identity
    assert "train/reward" in metrics and "train/edit_success" in metrics


def test_world_pretraining_logs_what_the_judge_claim_reads(tracked: str) -> None:
    metrics = run(SPECS / "world.yaml", ["data.num_samples=400", "trainer.max_steps=20"]).metrics
    assert 0.0 <= metrics["test/oracle_acc_recon"] <= 1.0 and metrics["test/recon_mse"] > 0


def test_paper_scale_spec_names_each_missing_asset(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("diffusers")
    import huggingface_hub.constants

    monkeypatch.delenv("EXPSPEC_EDIT_BENCHMARK", raising=False)
    with pytest.raises(FileNotFoundError, match=r"edit_instructions: a JSON-lines file of \{image, instruction\} "
                                                r"edit records not found \(\$EXPSPEC_EDIT_BENCHMARK = \(unset\)\).*Nothing is downloaded"):
        run(SPECS / "instruct_pix2pix.yaml", ["hardware.accelerator=cpu"])
    benchmark = tmp_path / "edits.jsonl"
    benchmark.write_text('{"image": "cat.png", "instruction": "make the cat black"}\n')
    monkeypatch.setenv("EXPSPEC_EDIT_BENCHMARK", str(benchmark))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(FileNotFoundError, match=r"model 'timbrooks/instruct-pix2pix'.*Nothing is downloaded"):
        run(SPECS / "instruct_pix2pix.yaml", ["hardware.accelerator=cpu"])
