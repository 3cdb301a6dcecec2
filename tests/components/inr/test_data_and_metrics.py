"""coord_signal (images as coordinate signals) and PSNR."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from components.inr.data import CoordSignal, as_points, pixel_grid
from components.inr.metrics import PSNR


def test_pixel_grid_is_row_major_in_minus_one_to_one() -> None:
    grid = pixel_grid(2, 3)
    assert grid.tolist() == [[-1, -1], [-1, 0], [-1, 1], [1, -1], [1, 0], [1, 1]]


def test_points_pair_each_coordinate_with_its_pixel() -> None:
    images = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    points = as_points(images)
    assert points["x"].shape == (2, 4, 5) and points["y"].shape == (2, 4, 3)
    assert points["x"][1, 2].tolist() == [1, -1, *images[1, :, 1, 0].tolist()]
    assert np.array_equal(points["x"][..., 2:], points["y"])


def test_digits_are_real_8x8_scans_in_unit_range() -> None:
    data = CoordSignal(source="digits")
    train, test = data.split("train"), data.split("test")
    assert train["x"].shape[1:] == (64, 3) and len(test["x"]) == round(1797 * 0.15)
    assert train["y"].min() == 0 and train["y"].max() == 1
    assert len(train["x"]) + len(data.split("val")["x"]) + len(test["x"]) == 1797


def test_an_image_folder_is_read_cropped_and_resized(tmp_path: Path) -> None:
    from PIL import Image

    (tmp_path / "a").mkdir()
    Image.new("RGB", (12, 8), (255, 0, 0)).save(tmp_path / "a" / "red.png")
    Image.new("RGB", (8, 8), (0, 0, 255)).save(tmp_path / "blue.jpg")
    data = CoordSignal(source="image_folder", root=str(tmp_path), image_size=4, channels=3,
                       val_fraction=0.0, test_fraction=0.0)
    y = data.split("train")["y"]
    assert y.shape == (2, 16, 3)
    colours = sorted(tuple(row.round().tolist()) for row in y.mean(1))
    assert colours == [(0.0, 0.0, 1.0), (1.0, 0.0, 0.0)]


def test_a_missing_image_folder_stops_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_INR_IMAGES", raising=False)
    with pytest.raises(FileNotFoundError, match=r"coord_signal: a folder of images not found "
                                                r"\(\$EXPSPEC_INR_IMAGES = \(unset\)\).*Nothing is downloaded"):
        CoordSignal(source="image_folder")


def test_psnr_is_the_mean_of_per_signal_values() -> None:
    y = torch.zeros(2, 4, 1)
    outputs = torch.stack([torch.full((4, 1), 0.1), torch.full((4, 1), 0.01)])
    metric = PSNR()
    metric.update(outputs, {"y": y})
    assert math.isclose(metric.compute().item(), (20.0 + 40.0) / 2, rel_tol=1e-5)


def test_psnr_peak_and_errors() -> None:
    metric = PSNR(peak=255.0)
    metric.update(torch.full((1, 2, 3), 1.0), {"y": torch.zeros(1, 2, 3)})
    assert math.isclose(metric.compute().item(), 20 * math.log10(255.0), rel_tol=1e-5)
    with pytest.raises(RuntimeError, match="compute\\(\\) before any update"):
        PSNR().compute()
    with pytest.raises(ValueError, match="do not match targets"):
        PSNR().update(torch.zeros(1, 2, 1), {"y": torch.zeros(1, 3, 1)})
