"""Ordered domain sequences for gradual domain adaptation (GDA): a labelled source, unlabelled
intermediate domains, and an unlabelled target, shifted step by step (Kumar et al. 2020, "Understanding
self-training for gradual domain adaptation"; FlowGDA, NeurIPS 2026, specs/flowgda/).

Generators (`generator`):

- ``rotated_digits``: sklearn's 1,797 8x8 digits (shipped with scikit-learn), each domain rotated by
  its angle with `scipy.ndimage.rotate` (bilinear, same frame), pixels scaled to [0, 1];
- ``rotating_moons``: sklearn's two moons (fresh samples per domain), rotated about their centre;
- ``rotated_mnist``: the paper-scale GDA benchmark, MNIST (local idx files, never downloaded) rotated
  by each domain's angle.

Batches. Train: {"x": (B, D, F), "y": (B,)}: row i holds a *different* example for each of the D
domains (the domains' examples are disjoint draws, never the same image rotated), and "y" is the
label of the source example only: the labels of the other domains are not in the train split at all.
Val and test: {"x": (B, D, F), "y": (B, D)}: the same held-out example at every domain's angle, with
its label, for evaluation only.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from components.data.base import ArrayDataModule, Arrays
from components.types import NonNegativeFloat, PositiveInt

Generator = Literal["rotated_digits", "rotating_moons", "rotated_mnist"]


def rotate_images(images: np.ndarray, angle: float) -> np.ndarray:
    """(N, H, W) images rotated counter-clockwise by `angle` degrees about their centre, same frame,
    bilinear, zero outside."""
    from scipy.ndimage import rotate

    return rotate(images, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)


def rotate_points(points: np.ndarray, angle: float) -> np.ndarray:
    """(N, 2) points rotated counter-clockwise by `angle` degrees about the origin."""
    theta = np.deg2rad(angle)
    rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    return points @ rotation.T


def moons(n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n two-moons points centred at the origin (sklearn's make_moons, shifted by its mean)."""
    from sklearn.datasets import make_moons

    x, y = make_moons(n, noise=noise, random_state=int(rng.integers(2**31)))
    return x - np.array([0.5, 0.25]), y


def load_mnist(root: str | None) -> tuple[np.ndarray, np.ndarray]:
    """All 70,000 MNIST images (N, 28, 28) in [0, 1] and labels, from local idx files."""
    from components.data.images import find_root, read_idx

    files = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    folder = find_root(root, "EXPSPEC_MNIST_DIR", [], files, "MNIST",
                        " (the four idx files of http://yann.lecun.com/exdb/mnist/, gzipped)")
    images = np.concatenate([read_idx(folder / files[0]), read_idx(folder / files[2])]).astype(np.float32) / 255
    labels = np.concatenate([read_idx(folder / files[1]), read_idx(folder / files[3])]).astype(np.int64)
    return images, labels


class DomainSequence(ArrayDataModule):
    """A source -> intermediates -> target sequence of shifted domains (module docstring).

    Args:
        generator: Which data (module docstring).
        angles: Rotation of each domain in degrees, the source first and the target last (>= 2).
        num_train: Training examples per domain (disjoint across domains for the image generators:
            the pool must hold num_train x len(angles) + num_val + num_test images).
        num_val: Held-out examples, shown at every angle.
        num_test: Held-out examples, shown at every angle.
        noise: Gaussian noise of the moons (rotating_moons only).
        root: Folder with MNIST's idx files (rotated_mnist only); None: $EXPSPEC_MNIST_DIR.
        data_seed: Seed of which examples go to which domain and split (and of the moons' samples).
        batch_size: Rows per batch (each row one example per domain).
    """

    def __init__(self, generator: Generator = "rotated_digits",
                 angles: tuple[float, ...] = (0.0, 15.0, 30.0, 45.0, 60.0), num_train: PositiveInt = 250,
                 num_val: PositiveInt = 150, num_test: PositiveInt = 300, noise: NonNegativeFloat = 0.1,
                 root: str | None = None, data_seed: int = 0, batch_size: PositiveInt = 64) -> None:
        super().__init__(batch_size, standardize=False)
        if len(angles) < 2:
            raise ValueError(f"angles needs a source and a target (>= 2 domains), got {list(angles)}")
        self.generator, self.angles = generator, [float(a) for a in angles]
        self.num_train, self.num_val, self.num_test = num_train, num_val, num_test
        self.noise, self.root, self.data_seed = noise, root, data_seed
        if generator == "rotated_mnist":
            load_mnist(root)  # fail at build time, before any training, when the files are missing

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.data_seed)
        if self.generator == "rotating_moons":
            return self._moons(rng)
        if self.generator == "rotated_digits":
            from sklearn.datasets import load_digits

            digits = load_digits()
            images, labels = digits.images.astype(np.float32) / 16, digits.target.astype(np.int64)
        elif self.generator == "rotated_mnist":
            images, labels = load_mnist(self.root)
        else:
            raise ValueError(f"generator must be one of rotated_digits, rotating_moons, rotated_mnist; "
                             f"got '{self.generator}'")
        return self._images(images, labels, rng)

    def _images(self, images: np.ndarray, labels: np.ndarray, rng: np.random.Generator) -> dict[str, Arrays]:
        d, n = len(self.angles), self.num_train
        needed = n * d + self.num_val + self.num_test
        if needed > len(images):
            raise ValueError(f"{self.generator} has {len(images)} images; num_train x {d} domains + num_val + "
                             f"num_test = {needed}")
        order = rng.permutation(len(images))
        held = {"val": order[:self.num_val], "test": order[self.num_val:self.num_val + self.num_test]}
        train = order[self.num_val + self.num_test:needed].reshape(d, n)  # disjoint examples per domain
        x_train = np.stack([rotate_images(images[train[k]], a).reshape(n, -1) for k, a in enumerate(self.angles)], 1)
        splits = {"train": {"x": x_train, "y": labels[train[0]]}}
        for split, index in held.items():
            x = np.stack([rotate_images(images[index], a).reshape(len(index), -1) for a in self.angles], 1)
            splits[split] = {"x": x, "y": np.repeat(labels[index][:, None], d, 1)}
        return splits

    def _moons(self, rng: np.random.Generator) -> dict[str, Arrays]:
        train = [moons(self.num_train, self.noise, rng) for _ in self.angles]
        splits = {"train": {"x": np.stack([rotate_points(x, a) for (x, _), a in zip(train, self.angles)], 1),
                            "y": train[0][1]}}
        for split, size in (("val", self.num_val), ("test", self.num_test)):
            x, y = moons(size, self.noise, rng)
            splits[split] = {"x": np.stack([rotate_points(x, a) for a in self.angles], 1),
                             "y": np.repeat(y[:, None], len(self.angles), 1)}
        return splits

    def info(self) -> dict[str, int]:
        """in_features (per domain) and num_classes, checked against the model by the builder."""
        train = self.split("train")
        return {"in_features": int(train["x"].shape[2]), "num_classes": int(self.split("test")["y"].max()) + 1,
                "num_domains": int(train["x"].shape[1])}
