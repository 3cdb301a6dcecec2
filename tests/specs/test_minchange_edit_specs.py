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


def _editors(unintended: tuple[float, ...], success: tuple[float, ...], outside: tuple[float, ...]) -> list:
    from framework.claims import Numbers

    return [Numbers({"test/unintended_rate": u, "test/edit_success": s, "test/outside_mask_change": o})
            for u, s, o in zip(unintended, success, outside)]


def test_each_claims_control_makes_its_check_false() -> None:
    """On results where every claim holds (the paper's, made up here: the minimal-change editor
    clearly below both baselines on every seed), each claim's check is true and its control (an
    alias swap: a baseline in place of the method) makes it false."""
    from framework.claims import Numbers, evaluate, load_claims

    results = {
        "minchange": _editors((0.30, 0.32, 0.31), (0.85, 0.90, 0.88), (0.05, 0.06, 0.055)),
        "edit_only": _editors((0.64, 0.63, 0.65), (1.0, 1.0, 0.99), (0.18, 0.20, 0.19)),
        "l1": _editors((0.62, 0.61, 0.64), (1.0, 0.99, 1.0), (0.11, 0.12, 0.115)),
        "world": Numbers({"test/oracle_acc_recon": 0.99}),
        "world_short": Numbers({"test/oracle_acc_recon": 0.40}),
    }
    claims, _ = load_claims(SPECS)
    for claim in claims.claims:
        outcome = evaluate(claim, results)
        assert outcome.passed and outcome.control_passed is False, (claim.name, outcome)
