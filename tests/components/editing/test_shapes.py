"""The procedural shapes: exact masks and colours, instructions that always ask for a change."""

from __future__ import annotations

import numpy as np
import pytest

from components.editing.shapes import (
    CARDINALITIES, FACTORS, ShapesAttributes, edit_targets, instruction_text, object_masks, render,
    sample_factors, sample_instructions)


@pytest.mark.parametrize(("shape", "size", "pixels"), [
    (0, 1, 64),   # large square: centre 8, half-width 3 -> 8 x 8 pixels
    (0, 0, 36),   # small square: 6 x 6
    (1, 0, 16),   # small circle: radius 2.5 around a pixel corner -> the 16 pixel centres within it
])
def test_object_area(shape: int, size: int, pixels: int) -> None:
    mask = object_masks(np.array([[shape, 0, 1, 1, size]]))
    assert mask.sum() == pixels


def test_render_paints_the_object_in_its_colour_at_its_place() -> None:
    images, masks = render(np.array([[0, 2, 0, 2, 0]]), intensity=np.array([0.8]))
    assert images.shape == (1, 3, 16, 16)
    assert np.allclose(images[0, 2], 0.8 * masks[0, 0]) and images[0, :2].max() == 0  # blue only
    rows, cols = np.nonzero(masks[0, 0])
    assert (rows.min(), rows.max(), cols.min(), cols.max()) == (9, 14, 1, 6)  # 6 x 6 around y = 12 (bottom), x = 4 (left)


def test_instructions_always_change_an_editable_factor() -> None:
    rng = np.random.default_rng(0)
    factors = sample_factors(2000, rng)
    which, value = sample_instructions(factors, rng, editable=(1, 4))
    assert set(which.tolist()) == {1, 4}
    assert (value != factors[np.arange(2000), which]).all()
    assert (value < np.asarray(CARDINALITIES)[which]).all()
    target = edit_targets(factors, which, value)
    assert ((target != factors).sum(1) == 1).all()


def test_instruction_text() -> None:
    assert instruction_text(1, 0) == "change colour to red"
    assert instruction_text(4, 1) == "change size to large"


def test_data_module_batches_and_masks() -> None:
    data = ShapesAttributes(num_samples=200, editable_factors=["colour", "size"])
    train = data.split("train")
    assert train["x"].shape == (160, 3, 16, 16) and train["y"].shape == (160, 5)
    assert set(train["edit_factor"].unique().tolist()) <= {1, 4}
    # the mask is the union of the object before and after the edit
    _, before = render(train["y"].numpy())
    _, after = render(edit_targets(train["y"].numpy(), train["edit_factor"].numpy(), train["edit_value"].numpy()))
    assert np.array_equal(train["mask"].numpy(), np.maximum(before, after))
    assert data.info() == {"in_channels": 3}


def test_unknown_editable_factor_is_refused() -> None:
    with pytest.raises(ValueError, match=r"editable_factors must be a non-empty list of shape, colour, x, y, size; got \['hue'\]"):
        ShapesAttributes(editable_factors=["hue"])
    assert FACTORS == ("shape", "colour", "x", "y", "size")
