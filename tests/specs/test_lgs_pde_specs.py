"""lgs_pde's specs end to end at a shrunk size (VAE, then the latent solver from its weights), and
its paper-scale specs stopping at once, naming The Well's folder, when the data is not here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from framework.runner import run

SPECS = Path(__file__).resolve().parents[2] / "specs/lgs_pde"
SHRINK = "data: {num_trajectories: 40, test_fraction: 0.5, num_frames: 24, batch_size: 16}\n"  # 20 test trajectories: every family


def shrunk(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body + SHRINK)
    return path


@pytest.mark.parametrize("objective", ["flow_matching", "mse"])
def test_shrunk_solver_trains_on_a_frozen_vae_and_reports_rollout_errors(
        tracked: str, tmp_path: Path, objective: str) -> None:
    shrunk(tmp_path, "vae.yaml", f"extends: {SPECS / 'vae.yaml'}\nname: vae-small\ntrainer: {{max_steps: 20}}\n")
    solver = shrunk(tmp_path, "solver.yaml", f"extends: {SPECS / 'lgs.yaml'}\nname: solver-small\n"
                    "init: {spec: vae.yaml, overrides: ['seed=${seed}']}\ntrainer: {max_steps: 10}\n")
    result = run(solver, [f"task.objective={objective}"])
    keys = {f"test/l2re_{k}" for k in (1, 5, 10, 20)} | {"test/reconstruction_l2re"}
    keys |= {f"test/l2re_20_{f}" for f in ("heat", "advection", "burgers", "kuramoto_sivashinsky")}
    assert keys <= set(result.metrics)
    assert all(math.isfinite(result.metrics[k]) and result.metrics[k] > 0 for k in keys)
    # the VAE is loaded from its own run and stays frozen: its weights in the solver's final
    # checkpoint equal the upstream's
    upstream = run(tmp_path / "vae.yaml")
    before = torch.load(upstream.checkpoint, map_location="cpu", weights_only=True)
    after = torch.load(result.checkpoint, map_location="cpu", weights_only=True)
    before, after = (s.get("state_dict", s) for s in (before, after))
    vae_keys = [k for k in before if k.startswith("model.")]
    assert vae_keys and all(torch.equal(before[k], after[k]) for k in vae_keys)


def test_without_the_well_the_paper_specs_name_what_is_missing(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = ["hardware.accelerator=cpu", "hardware.precision=32-true"]
    monkeypatch.delenv("EXPSPEC_THE_WELL_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"the_well: The Well's base folder not found "
                                                r"\(\$EXPSPEC_THE_WELL_DIR = \(unset\)\).*Nothing is downloaded"):
        run(SPECS / "well_lgs.yaml", cpu)  # its upstream, well_vae.yaml, stops first
    monkeypatch.setenv("EXPSPEC_THE_WELL_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"no .hdf5 files in .*turbulent_radiative_layer_2D/data/train\. "
                                                r"Get them with `the-well-download"):
        run(SPECS / "well_vae.yaml", cpu)
