"""components/sysid/streams.py and components/data/stream.py: drift paths, stream layout, AR
regressors, synthetic wear, and C-MAPSS read from a local file (or a clear error without it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from components.sysid.streams import CMAPSS, PATHS, DriftingLinear, SyntheticDegradation, ar_regressors

SPECS = Path(__file__).resolve().parents[3] / "specs" / "drift_sysid"


@pytest.mark.parametrize("drift", sorted(PATHS))
def test_paths_have_the_asked_variation_and_stay_in_the_ball(drift: str) -> None:
    path = PATHS[drift](np.random.default_rng(1), 2000, 3.0, 4, 1.0)
    variation = np.linalg.norm(np.diff(path, axis=0), axis=-1).sum()
    # chords of a circle fall short of its arc by a relative ~ (angle step)^2 / 24
    assert variation == pytest.approx(3.0, rel=1e-5 if drift == "sinusoid" else 1e-12)
    assert np.linalg.norm(path, axis=-1).max() <= 1.0 + 1e-12


def test_drifting_linear_groups_masks_and_noise() -> None:
    data = DriftingLinear(dim=3, horizons=[50, 200], betas=[0.0, 0.5], variation=2.0, reference_horizon=50,
                          noise=0.0, replicates=2, block=64)
    streams = data.streams
    assert data.groups == ["beta0_T50", "beta0_T200", "beta0.5_T50", "beta0.5_T200"]
    assert data.group_of.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert streams["x"].shape == (8, 200, 3) and streams["mask"].sum(1).tolist() == [50, 50, 200, 200] * 2
    theta, x, y = streams["theta"].numpy(), streams["x"].numpy(), streams["y"].numpy()
    assert np.allclose(y, (x * theta).sum(-1) * streams["mask"].numpy(), atol=1e-12)  # noise 0
    # V_T = 2 (200 / 50)^0.5 = 4 for beta 0.5, T = 200
    assert np.linalg.norm(np.diff(theta[6], axis=0), axis=-1).sum() == pytest.approx(4.0, rel=1e-4)
    blocks = list(data.train_dataloader())
    assert [b["x"].shape[1] for b in blocks] == [64, 64, 64, 8]
    assert data.info() == {"streams": 8, "steps": 200, "in_features": 3}


def test_ar_regressors_by_hand() -> None:
    x, y = ar_regressors(np.array([1.0, 2.0, 4.0, 8.0]), 2)
    assert x.tolist() == [[1.0, 2.0, 1.0], [1.0, 4.0, 2.0]] and y.tolist() == [4.0, 8.0]


def test_synthetic_degradation_wear_runs_from_new_to_failure() -> None:
    data = SyntheticDegradation(engines=5, min_life=100, max_life=120, order=2)
    streams = data.streams
    lives = streams["mask"].sum(1).numpy()
    assert ((98 <= lives) & (lives <= 118)).all()  # life minus the AR order
    for s, n in enumerate(lives):
        wear = streams["wear"][s, :n].numpy()
        assert np.all(np.diff(wear) > 0) and wear[-1] == pytest.approx(1.0) and wear[0] < 0.01


def _fake_fd001(folder: Path, units: int = 3) -> None:
    """A file in C-MAPSS's layout: unit, cycle, 3 settings, 21 sensors, space separated."""
    rng = np.random.default_rng(0)
    rows = []
    for unit in range(1, units + 1):
        for cycle in range(1, 41 + unit):
            rows.append(" ".join(map(str, [unit, cycle, 0.0, 0.0, 100.0, *(rng.normal(size=21) + cycle / 40)])))
    (folder / "train_FD001.txt").write_text("\n".join(rows) + "\n")


def test_cmapss_reads_units_and_sensors(tmp_path: Path) -> None:
    _fake_fd001(tmp_path)
    data = CMAPSS(root=str(tmp_path), sensors=["s2", "s11"], order=2, baseline=10)
    streams = data.streams
    assert data.groups == ["s2", "s11"] and data.group_of.tolist() == [0, 1, 0, 1, 0, 1]
    assert streams["mask"].sum(1).tolist() == [39, 39, 40, 40, 41, 41]  # 40 + unit cycles, minus the order
    assert streams["wear"][0, 38].item() == pytest.approx(1.0) and streams["wear"][0, 0].item() == pytest.approx(3 / 41)


def test_cmapss_without_the_file_fails_at_build_naming_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_CMAPSS_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"C-MAPSS file not found: .*train_FD003.txt .* Nothing is downloaded"):
        CMAPSS(root=str(tmp_path), subset="FD003")
    with pytest.raises(FileNotFoundError, match=r"EXPSPEC_CMAPSS_DIR"):
        CMAPSS()


def test_cmapss_spec_fails_early_without_data_and_runs_with_it(tracked: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from framework.runner import run

    monkeypatch.delenv("EXPSPEC_CMAPSS_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="C-MAPSS file not found"):
        run(SPECS / "cmapss_fd001.yaml")
    _fake_fd001(tmp_path)
    monkeypatch.setenv("EXPSPEC_CMAPSS_DIR", str(tmp_path))
    result = run(SPECS / "cmapss_fd001.yaml", ["data.sensors=[s2, s11]"])
    assert -1.0 <= result.metrics["test/health_spearman_adaptive"] <= 1.0
    assert result.metrics["test/loss_oracle_s2"] > 0
