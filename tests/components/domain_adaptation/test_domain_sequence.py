"""domain_sequence: the rotations, what each split holds (labels on the source only in train), and
that the paper-scale MNIST generator stops at construction without its files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from components.domain_adaptation.data import DomainSequence, rotate_images, rotate_points


def test_rotations_are_counter_clockwise_by_the_angle() -> None:
    assert np.allclose(rotate_points(np.array([[1.0, 0.0], [0.0, 2.0]]), 90), [[0.0, 1.0], [-2.0, 0.0]])
    image = np.zeros((1, 8, 8))
    image[0, 1, 5] = 1.0  # upper right
    assert np.allclose(rotate_images(image, 90), np.rot90(image, 1, axes=(1, 2)))  # -> upper left
    assert np.allclose(rotate_images(image, 0), image)


def test_digits_train_split_holds_disjoint_images_and_the_source_labels_only() -> None:
    data = DomainSequence("rotated_digits", (0.0, 30.0, 60.0), num_train=100, num_val=20, num_test=40)
    train, test = data.split("train"), data.split("test")
    assert tuple(train["x"].shape) == (100, 3, 64) and tuple(train["y"].shape) == (100,)
    assert tuple(test["x"].shape) == (40, 3, 64) and tuple(test["y"].shape) == (40, 3)
    assert data.info() == {"in_features": 64, "num_classes": 10, "num_domains": 3}
    assert float(train["x"].min()) >= 0.0 and float(train["x"].max()) <= 1.0
    # Disjoint draws: no source image reappears in another domain (undo the rotation exactly: 0 deg).
    same_angle = DomainSequence("rotated_digits", (0.0, 0.0), num_train=300, num_val=20, num_test=40)
    x = same_angle.split("train")["x"].numpy()
    assert not (np.abs(x[:, None, 0] - x[None, :, 1]).sum(-1) == 0).any()
    # Test rows show the same image at every angle, with its label at every domain.
    first = test["x"][:, 0].numpy().reshape(-1, 8, 8)
    assert np.allclose(test["x"][:, 2].numpy().reshape(-1, 8, 8), rotate_images(first, 60.0), atol=1e-6)
    assert (test["y"] == test["y"][:, :1]).all()


def test_moons_domains_are_rotations_of_the_source() -> None:
    data = DomainSequence("rotating_moons", (0.0, 45.0, 90.0), num_train=50, num_val=10, num_test=30)
    test = data.split("test")["x"].numpy()
    assert np.allclose(test[:, 2], rotate_points(test[:, 0], 90.0), atol=1e-5)
    assert np.abs(test[:, 0].mean(0)).max() < 0.3  # centred, so rotation keeps the moons in place


def test_train_and_test_domains_rotate_the_same_way() -> None:
    # A swapped direction between the (unlabelled) train domains and the test domains would make every
    # adapted model look below chance: undoing domain k's angle on its train points must land them on
    # the source moons (of the test split), undoing it the other way must not.
    data = DomainSequence("rotating_moons", (0.0, 30.0, 60.0), num_train=400, num_val=10, num_test=400)
    train, source = data.split("train")["x"].numpy(), data.split("test")["x"][:, 0].numpy()

    def distance(points: np.ndarray) -> float:  # mean distance to the nearest source point
        return float(np.linalg.norm(points[:, None] - source[None], axis=-1).min(1).mean())

    for k, angle in ((1, 30.0), (2, 60.0)):
        assert distance(rotate_points(train[:, k], -angle)) < 0.1 < distance(rotate_points(train[:, k], angle))


def test_too_many_images_requested_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"rotated_digits has 1797 images; num_train x 5 domains \+ num_val \+ "
                                         r"num_test = 2100"):
        DomainSequence("rotated_digits", num_train=360, num_val=150, num_test=150).split("train")


def test_rotated_mnist_without_its_files_stops_at_construction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_MNIST_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"MNIST files not found \(need train-images-idx3-ubyte.gz.*; tried "
                                                r"\(none\)\). Provide them with data.root=<folder>, or "
                                                r"\$EXPSPEC_MNIST_DIR=<folder>.*Nothing is downloaded."):
        DomainSequence("rotated_mnist")
    with pytest.raises(FileNotFoundError, match=f"tried {tmp_path}"):
        DomainSequence("rotated_mnist", root=str(tmp_path))
