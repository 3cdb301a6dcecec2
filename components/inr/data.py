"""Images as coordinate signals for INR hypernetworks: each image becomes its P pixels as
(coordinate, value) points, x (N, P, 2 + C) = (row, column in [-1, 1], then the C values in
[0, 1]) and y (N, P, C) = the values, the reconstruction target.

Sources: scikit-learn's bundled digits (1797 real 8x8 grey scans of handwritten digits, values
pixel / 16; no download), or a local folder of images (CelebA's img_align_celeba/, Imagenette's
train/ and val/ class folders, any tree of .jpg/.png), center-cropped to a square and resized.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from components.data.base import Arrays, ArrayDataModule, local_path
from components.data.images import IMAGE_SUFFIXES
from components.types import NonNegativeInt, PositiveInt, ProperFraction


def pixel_grid(height: int, width: int) -> np.ndarray:
    """(height * width, 2) coordinates (row, column), each in [-1, 1], in row-major pixel order."""
    rows, cols = np.linspace(-1.0, 1.0, height), np.linspace(-1.0, 1.0, width)
    grid = np.stack(np.meshgrid(rows, cols, indexing="ij"), axis=-1)
    return grid.reshape(-1, 2).astype(np.float32)


def as_points(images: np.ndarray) -> Arrays:
    """Images (N, C, H, W) in [0, 1] -> {"x": (N, H*W, 2 + C), "y": (N, H*W, C)}."""
    n, c, h, w = images.shape
    values = images.transpose(0, 2, 3, 1).reshape(n, h * w, c).astype(np.float32)
    coords = np.broadcast_to(pixel_grid(h, w), (n, h * w, 2))
    return {"x": np.concatenate([coords, values], axis=-1), "y": values}


def load_image_folder(root: str, image_size: int, channels: int, max_images: int) -> np.ndarray:
    """The images under `root` (any depth, sorted by path), center-cropped square, resized to
    image_size, as (N, channels, S, S) float32 in [0, 1]; at most max_images (0: all)."""
    from PIL import Image

    paths = sorted(p for p in Path(root).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise FileNotFoundError(f"coord_signal: no images under {root} (suffixes {sorted(IMAGE_SUFFIXES)})")
    if max_images:
        paths = paths[:max_images]
    images = np.empty((len(paths), channels, image_size, image_size), dtype=np.float32)
    for index, path in enumerate(paths):
        with Image.open(path) as image:
            image = image.convert("L" if channels == 1 else "RGB")
            w, h = image.size
            side = min(w, h)
            box = ((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side)
            image = image.resize((image_size, image_size), Image.Resampling.BICUBIC, box=box)
            array = np.asarray(image, dtype=np.float32) / 255.0
        images[index] = array[None] if channels == 1 else array.transpose(2, 0, 1)
    return images


class CoordSignal(ArrayDataModule):
    """Images as coordinate signals (module docstring), split into train/val/test by images.

    Args:
        source: 'digits' (scikit-learn's 8x8 digits) or 'image_folder' (local images).
        root: The image folder (source image_folder); None: the environment variable `env`.
        env: Environment variable naming the folder when root is None.
        image_size: Side of the square the folder's images are resized to.
        channels: 1 (grey) or 3 (RGB) for folder images; digits are grey.
        max_images: Read at most this many folder images (0: all).
        batch_size, val_fraction, test_fraction, split_seed, num_workers: See ArrayDataModule.
    """

    def __init__(self, source: Literal["digits", "image_folder"] = "digits", root: str | None = None,
                 env: str = "EXPSPEC_INR_IMAGES", image_size: PositiveInt = 64, channels: Literal[1, 3] = 3,
                 max_images: NonNegativeInt = 0, batch_size: PositiveInt = 64, val_fraction: ProperFraction = 0.1,
                 test_fraction: ProperFraction = 0.15, split_seed: int = 0, num_workers: NonNegativeInt = 0) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, split_seed, standardize=False, num_workers=num_workers)
        if source not in ("digits", "image_folder"):
            raise ValueError(f"source must be 'digits' or 'image_folder', got {source!r}")
        self.source, self.image_size, self.channels, self.max_images = source, image_size, channels, max_images
        self.root = None
        if source == "image_folder":  # checked here, so a run without its images stops before training
            self.root = local_path("coord_signal", "data.root", root, env, "a folder of images", folder=True)

    def load(self) -> Arrays:
        if self.source == "digits":
            from sklearn.datasets import load_digits

            images = (np.asarray(load_digits().images, dtype=np.float32) / 16.0)[:, None]
        else:
            images = load_image_folder(self.root, self.image_size, self.channels, self.max_images)
        return as_points(images)
