"""lotts specs beyond "it runs": the sampling task logs image grids and masks to MLflow, and the
paper-scale spec stops at once, before any sampling, when the weights are not on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.loader import load_spec
from framework.runner import run

pytest.importorskip("diffusers")

LOTTS = Path(__file__).resolve().parents[2] / "specs/lotts"


def test_tiny_lotts_logs_grids_and_masks(tracked: str, upstream_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(upstream_cache))
    result = run(LOTTS / "tiny.yaml", ["data.repeat=1", "data.batch_size=10", "task.sampler.rounds=1"])
    client = MlflowClient(tracked)
    logged = {a.path for a in client.list_artifacts(result.run_id, "samples")}
    assert logged == {f"samples/test_batch0_{k}.png" for k in ("initial_images", "images", "masks")}
    assert result.metrics["test/outside_mask_change"] == 0.0
    assert result.metrics["test/nfe"] == 2 * 20 + 2 + 4 * 6


def test_sdxl_without_weights_stops_at_start(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    # an empty cache, so the test means the same on a machine that does hold the weights
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(FileNotFoundError, match=r"stabilityai/stable-diffusion-xl-base-1.0.*Nothing is downloaded.*random_init=true"):
        run(LOTTS / "sdxl.yaml", ["hardware.accelerator=cpu"])
    runs = MlflowClient(tracked).search_runs([MlflowClient(tracked).get_experiment_by_name("lotts").experiment_id])
    assert runs and runs[0].info.status == "FAILED"


@pytest.mark.parametrize("family", ["sdxl", "sd21", "flux"])
def test_paper_scale_best_of_n_samples_as_lotts_does(family: str) -> None:
    """Best-of-N samples with the prompt LoTTS samples and refines with (an equal budget of
    conditioning: no "high quality" suffix for one method only), with the same steps and guidance."""
    lotts = load_spec(LOTTS / f"{family}.yaml").data["task"]["sampler"]
    best = load_spec(LOTTS / f"{family}_best_of_n.yaml").data["task"]["sampler"]
    assert lotts["type"] == "lotts" and best["type"] == "best_of_n"
    assert lotts["quality"] == lotts["refine_quality"] == best["quality"] == "high"
    assert (best["num_steps"], best["guidance_scale"]) == (lotts["num_steps"], lotts["guidance_scale"])
