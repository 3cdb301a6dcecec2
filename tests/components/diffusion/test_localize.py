"""LoTTS localizer, sampling metrics, prompt data and image grids: no diffusers needed."""

import pytest
import torch

from components.diffusion.prompts import PromptSet
from components.diffusion.localize import QualityContrastLocalizer
from components.diffusion.metrics import NFE, MaskIoU, OutsideMaskChange, RandomMaskIoU, VerifierScore, iou
from components.diffusion.task import image_grid


def _maps(batch=4, side=8, spot=(2, 5)):
    """Cross maps over 2 keys where key 1 (quality) gets extra attention at one 2x2 spot when
    the prompt is low quality: a known defect the localizer must find."""
    q = side * side
    low = torch.full((batch, q, 2), 0.5)
    high = torch.full((batch, q, 2), 0.5)
    grid = torch.zeros(side, side)
    grid[spot[0] : spot[0] + 2, spot[1] : spot[1] + 2] = 1
    low[:, :, 1] += 0.3 * grid.flatten()
    low[:, :, 0] = 1 - low[:, :, 1]
    weights = torch.zeros(batch, 2)
    weights[:, 1] = 1
    return {q: low}, {q: high}, weights, grid


def test_localizer_finds_the_contrast_spot():
    low, high, w, grid = _maps()
    mask, heat = QualityContrastLocalizer(mask_fraction=4 / 64)(low, high, w, w, {}, (8, 8))
    assert mask.shape == (4, 1, 8, 8)
    assert torch.equal(mask[0, 0], grid)


def test_random_contrast_ignores_the_attention_but_keeps_the_area():
    low, high, w, grid = _maps()
    torch.manual_seed(0)
    mask, _ = QualityContrastLocalizer(mask_fraction=4 / 64, contrast="random")(low, high, w, w, {}, (8, 8))
    assert mask.shape == (4, 1, 8, 8) and mask.flatten(1).sum(1).tolist() == [4.0] * 4
    assert not all(torch.equal(m[0], grid) for m in mask)


def test_localizer_upsamples_coarse_resolutions_and_dilates():
    low, high, w, grid = _maps(side=4, spot=(1, 1))
    mask, _ = QualityContrastLocalizer(mask_fraction=1 / 64, dilate=1)(low, high, w, w, {}, (8, 8))
    assert mask.shape == (4, 1, 8, 8) and 4 <= int(mask[0].sum()) <= 16


def test_keep_largest_keeps_one_component():
    heat = torch.zeros(1, 1, 8, 8)
    heat[0, 0, 0, 0], heat[0, 0, 7, 7], heat[0, 0, 7, 6] = 1.0, 0.9, 0.9
    mask = QualityContrastLocalizer(mask_fraction=3 / 64, keep_largest=True).refine(heat)
    assert mask[0, 0, 0, 0] == 0 and mask[0, 0, 7, 7] == 1 and int(mask.sum()) == 2


@pytest.mark.parametrize("arguments, problems", [
    ({"mask_fraction": 0.0}, {"mask_fraction": "must be > 0 and <= 1, got number 0.0"}),
    ({"propagation_weight": 1.5}, {"propagation_weight": "must be >= 0 and <= 1, got number 1.5"}),
    ({"dilate": -1, "resolutions": [64, 0]}, {"dilate": "must be >= 0, got integer -1",
                                              "resolutions.1": "must be >= 1, got integer 0"}),
    ({"mask_fraction": 1.0, "propagation_weight": 0.0, "propagation_steps": 0, "dilate": 0}, {}),
])
def test_localizer_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("localizers", "quality_contrast", **arguments) == problems


def test_metrics():
    outputs = {"nfe": torch.tensor([82.0, 82.0]), "scores": torch.tensor([0.5, 1.0]),
               "outside_change": torch.tensor([0.0, 2e-7])}
    for metric, expected in ((NFE(), 82.0), (VerifierScore(), 0.75), (OutsideMaskChange(), 2e-7)):
        metric.update(outputs, {})
        assert float(metric.compute()) == pytest.approx(expected)
    target = torch.zeros(2, 1, 8, 8)
    target[:, :, :3, :3] = 1
    pred = target.clone()
    pred[1] = 0
    pred[1, :, :3, :2] = 1  # 6 of the 9 cells
    assert iou(pred, target).tolist() == pytest.approx([1.0, 6 / 9])
    m, r = MaskIoU(), RandomMaskIoU(seed=0)
    m.update({"masks": pred}, {"defect_mask": target})
    r.update({"masks": pred}, {"defect_mask": target})
    assert float(m.compute()) == pytest.approx((1 + 6 / 9) / 2)
    assert float(r.compute()) < 0.5


def test_prompt_set_batches(tmp_path):
    data = PromptSet(prompts=["a", "b", "c"], repeat=2, batch_size=4)
    batches = list(data.test_dataloader())
    assert [b["prompt"] for b in batches] == [["a", "a", "b", "b"], ["c", "c"]]
    path = tmp_path / "p.txt"
    path.write_text("# header\nx\n\ny\n")
    assert PromptSet(file=str(path)).prompts() == ["x", "y"]
    with pytest.raises(ValueError, match="give exactly one of prompts and file"):
        PromptSet()


def test_image_grid_shape():
    grid = image_grid(torch.rand(5, 1, 8, 8), columns=4)
    assert grid.shape == (2 * 9 + 1, 4 * 9 + 1, 3) and grid.dtype.name == "uint8"
