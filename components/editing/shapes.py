"""Procedural 16x16 images of one shape with five discrete factors, and the edits between them.

Factors (`FACTORS`, cardinalities `CARDINALITIES`): shape (square, circle, triangle), colour (red,
green, blue), x and y (object centre at pixel 4, 8 or 12), size (half-width 2 or 3 pixels). An
image is black with one object drawn in its colour at an intensity drawn from U[0.75, 1] (a
nuisance no factor describes, so that images of equal factors differ). `render` is exact and
vectorised; it also returns the object's mask, so an edit's intended result and the region it may
touch (the union of the object's mask before and after) are known exactly.

An **instruction** is (factor, value): "set factor to value", with value different from the
image's current value ("change colour to red"). `ShapesAttributes` draws one per image.
"""

from __future__ import annotations

import numpy as np

from components.data.base import ArrayDataModule
from components.types import PositiveInt, ProperFraction

FACTORS = ("shape", "colour", "x", "y", "size")
VALUES = {
    "shape": ("square", "circle", "triangle"),
    "colour": ("red", "green", "blue"),
    "x": ("left", "centre", "right"),
    "y": ("top", "middle", "bottom"),
    "size": ("small", "large"),
}
CARDINALITIES = tuple(len(VALUES[f]) for f in FACTORS)
SIDE = 16
CENTRES = (4.0, 8.0, 12.0)
HALF_SIZES = (2.0, 3.0)
RGB = np.eye(3, dtype=np.float32)  # red, green, blue


def object_masks(factors: np.ndarray) -> np.ndarray:
    """(N, 5) factor values -> (N, 1, 16, 16) float masks of the objects (1 inside)."""
    factors = np.asarray(factors)
    grid = np.arange(SIDE, dtype=np.float32) + 0.5
    cx = np.asarray(CENTRES)[factors[:, 2]][:, None, None]
    cy = np.asarray(CENTRES)[factors[:, 3]][:, None, None]
    half = np.asarray(HALF_SIZES)[factors[:, 4]][:, None, None]
    dx, dy = grid[None, None, :] - cx, grid[None, :, None] - cy
    square = (np.abs(dx) <= half + 0.5) & (np.abs(dy) <= half + 0.5)
    circle = dx**2 + dy**2 <= (half + 0.5) ** 2
    # upward triangle: apex at the top, base of width 2*half+1 at the bottom
    triangle = (np.abs(dy) <= half + 0.5) & (np.abs(dx) <= (dy + half + 0.5) / 2 + 0.5)
    shape = factors[:, 0][:, None, None]
    mask = np.where(shape == 0, square, np.where(shape == 1, circle, triangle))
    return mask[:, None].astype(np.float32)


def render(factors: np.ndarray, intensity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(N, 5) factor values (and (N,) intensities, default 1) -> (images (N, 3, 16, 16) in [0, 1],
    masks (N, 1, 16, 16))."""
    factors = np.asarray(factors)
    mask = object_masks(factors)
    level = np.ones(len(factors), np.float32) if intensity is None else np.asarray(intensity, np.float32)
    colour = RGB[factors[:, 1]] * level[:, None]
    return (mask * colour[:, :, None, None]).astype(np.float32), mask


def sample_factors(n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 5) factor values drawn uniformly and independently."""
    return np.stack([rng.integers(0, k, n) for k in CARDINALITIES], axis=1)


def sample_instructions(factors: np.ndarray, rng: np.random.Generator,
                        editable: tuple[int, ...] = tuple(range(len(FACTORS)))) -> tuple[np.ndarray, np.ndarray]:
    """One instruction per image: a factor drawn from `editable` and a value of it drawn uniformly
    among those different from the image's. Returns (edit_factor (N,), edit_value (N,))."""
    n = len(factors)
    which = np.asarray(editable)[rng.integers(0, len(editable), n)]
    cards = np.asarray(CARDINALITIES)[which]
    current = factors[np.arange(n), which]
    shift = 1 + np.floor(rng.random(n) * (cards - 1)).astype(int)  # 1 .. card-1
    return which, (current + shift) % cards


def instruction_text(factor: int, value: int) -> str:
    """(1, 0) -> 'change colour to red'."""
    name = FACTORS[factor]
    return f"change {name} to {VALUES[name][value]}"


def edit_targets(factors: np.ndarray, edit_factor: np.ndarray, edit_value: np.ndarray) -> np.ndarray:
    """The factors an instruction asks for: the image's, with the edited one replaced."""
    target = np.array(factors, copy=True)
    target[np.arange(len(target)), edit_factor] = edit_value
    return target


class ShapesAttributes(ArrayDataModule):
    """Shapes with factors, each image with one edit instruction (module docstring).

    Batches: {"x": (B, 3, 16, 16) images in [0, 1], "y": (B, 5) factor values, "edit_factor",
    "edit_value": (B,) the instruction, "target_x": the image the instruction asks for (same
    intensity), "mask": (B, 1, 16, 16) union of the object's masks before and after the edit}.

    Args:
        num_samples: Images in the pool (split into train/val/test).
        editable_factors: Names of the factors instructions may edit.
        seed: Seed of the images and instructions (the pool), independent of the split.
        batch_size: Examples per batch.
        val_fraction: Share of the pool for validation.
        test_fraction: Share of the pool for test.
        split_seed: Seed of the split permutation.
    """

    def __init__(
        self,
        num_samples: PositiveInt = 4000,
        editable_factors: list[str] = list(FACTORS),  # noqa: B006 (JSON-typed default, never mutated)
        seed: int = 0,
        batch_size: PositiveInt = 64,
        val_fraction: ProperFraction = 0.1,
        test_fraction: ProperFraction = 0.1,
        split_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction,
                         split_seed=split_seed, standardize=False)
        unknown = [f for f in editable_factors if f not in FACTORS]
        if unknown or not editable_factors:
            raise ValueError(f"editable_factors must be a non-empty list of {', '.join(FACTORS)}; got {editable_factors}")
        self.num_samples, self.seed = num_samples, seed
        self.editable = tuple(FACTORS.index(f) for f in editable_factors)

    def load(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        factors = sample_factors(self.num_samples, rng)
        intensity = rng.uniform(0.75, 1.0, self.num_samples).astype(np.float32)
        edit_factor, edit_value = sample_instructions(factors, rng, self.editable)
        images, before = render(factors, intensity)
        target, after = render(edit_targets(factors, edit_factor, edit_value), intensity)
        return {"x": images, "y": factors.astype(np.int64), "edit_factor": edit_factor.astype(np.int64),
                "edit_value": edit_value.astype(np.int64), "target_x": target, "mask": np.maximum(before, after)}

    def info(self) -> dict[str, int]:
        return {"in_channels": 3}
