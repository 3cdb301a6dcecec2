"""Local-file image data modules (components/data/images.py): read fake files in the real formats,
and name the missing files (never download) when they are absent."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from components.data.images import CIFAR, FashionMNIST, ImageFolder


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _fake_fashion(root: Path, n_train: int = 40, n_test: int = 10) -> None:
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        _write_idx(root / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)


def test_fashion_mnist_reads_idx_files(tmp_path):
    _fake_fashion(tmp_path)
    data = FashionMNIST(root=str(tmp_path), train_subset=30, val_fraction=0.1)
    assert data.info() == {"in_channels": 1, "num_classes": 10}
    assert data.split("train")["x"].shape == (27, 1, 28, 28) and len(data.split("val")["x"]) == 3
    assert len(data.split("test")["y"]) == 10
    assert 0.0 <= float(data.split("test")["x"].min()) and float(data.split("test")["x"].max()) <= 1.0
    flat = FashionMNIST(root=str(tmp_path), flatten=True)
    assert flat.info()["in_features"] == 784


def test_fashion_mnist_names_the_missing_files(tmp_path, monkeypatch):
    monkeypatch.delenv("EXPSPEC_FASHION_MNIST_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"Fashion-MNIST files not found \(need train-images-idx3-ubyte.gz.*"
                                                r"tried .*\). Provide them with data.root=<folder>, or "
                                                r"\$EXPSPEC_FASHION_MNIST_DIR=<folder>, or `apt-get install "
                                                r"dataset-fashion-mnist`. Nothing is downloaded."):
        FashionMNIST(root=str(tmp_path)).setup()


def _fake_cifar10(root: Path, n: int = 10) -> None:
    """Random CIFAR-10 pickle batches under `root`: n images in each of the 5 training batches and the
    test batch, labels 0..9 in turn."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in [*(f"data_batch_{i}" for i in range(1, 6)), "test_batch"]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": [i % 10 for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(batch))


def test_cifar10_reads_pickle_batches_and_augments(tmp_path):
    _fake_cifar10(tmp_path, n=6)
    torch.manual_seed(0)  # a run seeds torch; the training sampler's order derives from that seed
    data = CIFAR("cifar10", root=str(tmp_path), val_fraction=0.1, batch_size=8)
    assert data.info() == {"in_channels": 3, "num_classes": 6}
    assert data.split("train")["x"].shape == (27, 3, 32, 32) and len(data.split("test")["x"]) == 6
    batch = next(iter(data.train_dataloader()))
    assert batch["x"].shape == (8, 3, 32, 32) and batch["y"].shape == (8,)


def test_training_batches_are_shifted_windows_of_the_padded_images_maybe_flipped(tmp_path):
    """CIFAR's augmentation, seen in its training batches: each image is a 32x32 window of the
    image padded by 4 zero pixels on each side, mirrored left-right or not."""
    _fake_cifar10(tmp_path, n=6)
    torch.manual_seed(0)
    data = CIFAR("cifar10", root=str(tmp_path), val_fraction=0.1, batch_size=27)
    images = torch.as_tensor(data.split("train")["x"])
    padded = torch.nn.functional.pad(images, [4, 4, 4, 4])
    out = next(iter(data.train_dataloader()))["x"]
    assert out.shape == images.shape
    shifts = set()
    for image in out:
        found = next(((dy, dx) for i in range(len(images)) for dy in range(9) for dx in range(9)
                      if torch.equal(image, padded[i, :, dy:dy + 32, dx:dx + 32])
                      or torch.equal(image, padded[i, :, dy:dy + 32, dx:dx + 32].flip(2))), None)
        assert found is not None, "an augmented image that is no window of a padded training image"
        shifts.add(found)
    assert len(shifts) > 1  # the windows move


def test_cifar_names_the_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"CIFAR100 files not found .* Nothing is downloaded."):
        CIFAR("cifar100", root=str(tmp_path)).setup()


def test_image_folder_decodes_and_crops(tmp_path):
    from PIL import Image

    for split in ("train", "val"):
        for c, name in enumerate(["cat", "dog"]):
            (tmp_path / split / name).mkdir(parents=True)
            for i in range(2):
                Image.fromarray(np.full((40, 50, 3), 60 * c + i, dtype=np.uint8)).save(tmp_path / split / name / f"{i}.png")
    torch.manual_seed(0)
    data = ImageFolder(root=str(tmp_path), image_size=16, batch_size=4, num_workers=0)
    assert data.info() == {"in_channels": 3, "num_classes": 2}
    for loader in (data.train_dataloader(), data.test_dataloader()):
        batch = next(iter(loader))
        assert batch["x"].shape == (4, 3, 16, 16) and sorted(batch["y"].tolist()) == [0, 0, 1, 1]


def test_image_folder_names_the_missing_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("EXPSPEC_IMAGENET_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"ImageNet-style folder files not found \(need train, val; tried .*\)"):
        ImageFolder(root=str(tmp_path / "imagenet")).info()


def test_paper_scale_cifar_spec_runs_on_fake_batches(tmp_path, tracked, monkeypatch):
    """specs/stompp/cifar10_resnet18.yaml end to end (3 steps, narrow ResNet-18) on fake CIFAR files."""
    import registry
    from framework.runner import run

    for table, name, target in [
        ("models", "binary_resnet", "components.binarization.models:BinaryResNet"),
        ("data", "cifar", "components.data.images:CIFAR"),
        ("callbacks", "progressive_binarization", "components.binarization.schedule:ProgressiveBinarization"),
    ]:
        monkeypatch.setitem(registry.KINDS[table]._entries, name, target)
    _fake_cifar10(tmp_path)
    spec = Path(__file__).resolve().parents[2] / "specs/stompp/cifar10_resnet18.yaml"
    short = ["trainer.max_epochs=1", "trainer.limit_train_batches=3", "trainer.limit_val_batches=1",
             "trainer.limit_test_batches=1", "hardware.accelerator=cpu", "hardware.threads=1", "model.width=4",
             "data.batch_size=4", "data.num_workers=0", "data.val_fraction=0.2", "scheduler.warmup_steps=1",
             f"data.root={tmp_path}"]
    result = run(spec, short)
    assert result.metrics["test/binarized_weights"] == 1.0 and result.metrics["test/binarized_activations"] == 1.0
    assert 0.0 <= result.metrics["test/accuracy"] <= 1.0
