"""attn_hypernet_inr's specs: the tiny method and the per-signal fitting baseline run end to end
(shrunk) and log PSNR and the parameter count; the paper-scale specs stop before training, naming
the missing image folder, and run (shrunk) on a local one; each claim's control makes it false."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from framework.claims import Numbers, evaluate, load_claims
from framework.runner import run

SPECS = Path(__file__).resolve().parents[2] / "specs/attn_hypernet_inr"
SHRINK = ["trainer.max_steps=3", "trainer.log_every_n_steps=1", "trainer.limit_test_batches=1"]
CPU = ["hardware.accelerator=cpu", "hardware.precision=32-true"]


def test_the_tiny_hypernetwork_trains_and_reports_psnr_and_parameters(tracked: str) -> None:
    result = run(SPECS / "attn.yaml", SHRINK)
    assert 0 < result.metrics["test/psnr"] < 40
    assert result.metrics["model/trainable_parameters"] > 10_000


def test_per_signal_fitting_improves_with_steps(tracked: str) -> None:
    psnr = [run(SPECS / "fit.yaml", [f"model.fit_steps={steps}", "data.batch_size=64", *SHRINK]).metrics["test/psnr"]
            for steps in (0, 30)]
    assert psnr[1] > psnr[0] + 5
    assert run(SPECS / "fit.yaml", ["model.fit_steps=0", *SHRINK]).metrics["model/trainable_parameters"] == 0


@pytest.mark.parametrize("spec, env", [("celeba.yaml", "EXPSPEC_CELEBA_DIR"),
                                       ("imagenette.yaml", "EXPSPEC_IMAGENETTE_DIR"),
                                       ("celeba_mlp_rollout.yaml", "EXPSPEC_CELEBA_DIR")])
def test_paper_scale_without_images_stops_at_start(spec: str, env: str, tracked: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(FileNotFoundError, match=rf"coord_signal: a folder of images not found \(\${env} = \(unset\)\)"
                                                r".* Nothing is downloaded"):
        run(SPECS / spec, CPU)


def test_paper_scale_runs_on_a_local_image_folder(tracked: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    for i in range(6):
        Image.new("RGB", (20, 16), (40 * i, 255 - 40 * i, 128)).save(tmp_path / f"{i:06d}.jpg")
    monkeypatch.setenv("EXPSPEC_CELEBA_DIR", str(tmp_path))
    shrunk = ["data.image_size=4", "data.batch_size=2", "data.val_fraction=0.2", "data.test_fraction=0.2",
              "model.width=8", "model.frequencies=2", "model.d_model=16", "model.heads=2", "model.steps=1",
              "scheduler.warmup_steps=1", "trainer.max_steps=2", "trainer.val_check_interval=2", *CPU]
    result = run(SPECS / "celeba.yaml", shrunk)
    assert math.isfinite(result.metrics["test/psnr"])  # an untrained INR can be below 0 dB (MSE > 1)


def _seeds(*psnr: float) -> list[Numbers]:
    return [Numbers({"test/psnr": value}) for value in psnr]


def test_each_claims_control_makes_its_check_false() -> None:
    """On results where every claim holds (the paper's, made up here), each claim's check is true
    and its control (an alias swap) makes it false."""
    params = lambda *counts: [Numbers({"model/trainable_parameters": c}) for c in counts]  # noqa: E731
    results = {
        "attn": _seeds(21.0, 21.5, 22.0), "mlp": _seeds(12.0, 12.5, 13.0),
        "fit30": _seeds(25.0, 25.5, 25.2), "fit0": _seeds(3.0, 3.1, 2.9),
        "attn_long": _seeds(24.0, 24.5, 25.0), "mlp_long": _seeds(14.0, 14.5, 15.0), "trans": _seeds(15.0, 15.5, 16.0), "mean_image": _seeds(10.9, 11.0, 11.1),
        "learned_init": Numbers({"test/psnr": 17.0}), "params_attn": params(50_000, 50_000, 50_000),
        "params_mlp": params(3.0e6, 3.5e7),
    }
    claims, _ = load_claims(SPECS)
    for claim in claims.claims:
        outcome = evaluate(claim, results)
        assert outcome.passed and outcome.control_passed is False, (claim.name, outcome)
