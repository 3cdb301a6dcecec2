"""Image classification data read from local files, never downloaded: Fashion-MNIST (idx files, e.g.
Debian's `dataset-fashion-mnist`), CIFAR-10/100 (the python pickle batches) and an ImageNet-style
class-per-folder tree. Written for StoMPP's paper-scale specs (specs/stompp/); usable by any
classifier. torchvision is not installable alongside this torch, so decoding and augmentation are
done here with numpy / torch / Pillow.

Every module looks for its files in `root`, else an environment variable, else a default path, and
raises FileNotFoundError naming the paths it tried and how to provide the files.
"""

from __future__ import annotations

import gzip
import os
import pickle
from pathlib import Path
from typing import Annotated, Literal

import lightning as L
import numpy as np
from annotated_types import Ge
import torch
from torch.utils.data import DataLoader, Dataset

from components.data.base import Arrays, ArrayDataModule, TensorDictDataset, keep_batch, train_loader
from components.types import NonNegativeInt, PositiveInt, ProperFraction


def find_root(root: str | None, env: str, defaults: list[str], required: list[str], what: str, how: str) -> Path:
    """The first candidate folder holding every `required` file; a clear error when none does."""
    candidates = [root] if root else [p for p in [os.environ.get(env), *defaults] if p]
    for candidate in candidates:
        if all((Path(candidate) / name).exists() for name in required):
            return Path(candidate)
    tried = ", ".join(candidates) or "(none)"
    raise FileNotFoundError(
        f"{what} files not found (need {', '.join(required)}; tried {tried}). Provide them with "
        f"data.root=<folder>, or ${env}=<folder>{how}. Nothing is downloaded."
    )


def read_idx(path: Path) -> np.ndarray:
    """An idx file (MNIST format), gzipped or not, as a numpy array."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


FASHION_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                 "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]


class FashionMNIST(ArrayDataModule):
    """Fashion-MNIST (Xiao et al. 2017), 60k train / 10k test 28x28 grey images, 10 classes, from
    local idx files (`apt-get install dataset-fashion-mnist` puts them in
    /usr/share/datasets/fashion-mnist). The validation split is carved from train.

    Args:
        root: Folder with the four *-ubyte.gz files; None: $EXPSPEC_FASHION_MNIST_DIR, then the
            Debian path.
        flatten: Rows of 784 features (for an MLP; standardized per feature) instead of
            (N, 1, 28, 28) images in [0, 1].
        train_subset: Use only the first this many training images (0: all), for quick runs.
        batch_size: See ArrayDataModule.
        val_fraction: Share of the training images held out for validation.
        split_seed: See ArrayDataModule.
        num_workers: See ArrayDataModule.
    """

    def __init__(self, root: str | None = None, flatten: bool = False, train_subset: NonNegativeInt = 0,
                 batch_size: PositiveInt = 128, val_fraction: ProperFraction = 0.1, split_seed: int = 0,
                 num_workers: NonNegativeInt = 0) -> None:
        super().__init__(batch_size, val_fraction, 0.0, split_seed, standardize=flatten, num_workers=num_workers)
        self.root, self.flatten, self.train_subset = root, flatten, train_subset

    def load(self) -> dict[str, Arrays]:
        root = find_root(self.root, "EXPSPEC_FASHION_MNIST_DIR", ["/usr/share/datasets/fashion-mnist"],
                          FASHION_FILES, "Fashion-MNIST", ", or `apt-get install dataset-fashion-mnist`")
        splits = {}
        for split, prefix in (("train", "train"), ("test", "t10k")):
            x = read_idx(root / f"{prefix}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
            y = read_idx(root / f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64)
            if split == "train" and self.train_subset:
                x, y = x[: self.train_subset], y[: self.train_subset]
            splits[split] = {"x": x.reshape(len(x), -1) if self.flatten else x[:, None], "y": y}
        return splits


class _Augmented(TensorDictDataset):
    """Batch-wise CIFAR augmentation: random crop with `pad` zero padding, and horizontal flip."""

    def __init__(self, tensors: dict[str, torch.Tensor], pad: int) -> None:
        super().__init__(tensors)
        self.pad = pad

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = super().__getitems__(indices)
        x = batch["x"]
        n, c, h, w = x.shape
        if self.pad:
            padded = torch.nn.functional.pad(x, [self.pad] * 4)
            dy, dx = torch.randint(0, 2 * self.pad + 1, (2, n))
            rows = (torch.arange(h)[None, :] + dy[:, None])[:, None, :, None]
            cols = (torch.arange(w)[None, :] + dx[:, None])[:, None, None, :]
            x = padded[torch.arange(n)[:, None, None, None], torch.arange(c)[None, :, None, None], rows, cols]
        flip = torch.rand(n) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(3), x)
        return {**batch, "x": x}


CIFAR_MEAN = {"cifar10": (0.4914, 0.4822, 0.4465), "cifar100": (0.5071, 0.4865, 0.4409)}
CIFAR_STD = {"cifar10": (0.2470, 0.2435, 0.2616), "cifar100": (0.2673, 0.2564, 0.2762)}
CIFAR_FILES = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels"),
    "cifar100": ("cifar-100-python", ["train"], ["test"], b"fine_labels"),
}


class CIFAR(ArrayDataModule):
    """CIFAR-10 / CIFAR-100 (Krizhevsky 2009) from the python pickle batches in a local folder
    (`cifar-10-batches-py/` or `cifar-100-python/` under `root`): 50k train / 10k test 32x32 RGB
    images, normalized per channel; training batches get random 4-pixel crops and horizontal flips.
    The validation split is carved from train.

    Args:
        name: cifar10 or cifar100.
        root: Folder holding the extracted archive's folder; None: $EXPSPEC_CIFAR_DIR, then ./data.
        augment: Random crop (padding 4) and horizontal flip on training batches.
        batch_size: See ArrayDataModule.
        val_fraction: Share of the training images held out for validation.
        split_seed: See ArrayDataModule.
        num_workers: See ArrayDataModule.
    """

    def __init__(self, name: Literal["cifar10", "cifar100"] = "cifar10", root: str | None = None, augment: bool = True,
                 batch_size: PositiveInt = 128, val_fraction: ProperFraction = 0.02, split_seed: int = 0,
                 num_workers: NonNegativeInt = 0) -> None:
        super().__init__(batch_size, val_fraction, 0.0, split_seed, standardize=False, num_workers=num_workers)
        if name not in CIFAR_FILES:
            raise ValueError(f"name must be one of {', '.join(CIFAR_FILES)}, got '{name}'")
        self.name, self.root, self.augment = name, root, augment

    def load(self) -> dict[str, Arrays]:
        folder, train_files, test_files, label_key = CIFAR_FILES[self.name]
        base = find_root(self.root, "EXPSPEC_CIFAR_DIR", ["data"], [f"{folder}/{f}" for f in train_files + test_files],
                          self.name.upper(), f" (the extracted {folder} archive of https://www.cs.toronto.edu/~kriz/cifar.html)")
        mean = np.array(CIFAR_MEAN[self.name], dtype=np.float32)[None, :, None, None]
        std = np.array(CIFAR_STD[self.name], dtype=np.float32)[None, :, None, None]
        splits = {}
        for split, files in (("train", train_files), ("test", test_files)):
            xs, ys = [], []
            for name in files:
                with open(base / folder / name, "rb") as f:
                    batch = pickle.load(f, encoding="bytes")
                xs.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
                ys.append(np.asarray(batch[label_key], dtype=np.int64))
            x = (np.concatenate(xs).astype(np.float32) / 255.0 - mean) / std
            splits[split] = {"x": x, "y": np.concatenate(ys)}
        return splits

    def train_dataloader(self) -> DataLoader:
        if not self.augment:
            return super().train_dataloader()
        dataset = _Augmented(self.split("train"), pad=4)
        return train_loader(dataset, self.batch_size, num_workers=self.num_workers, collate_fn=keep_batch,
                            persistent_workers=self.num_workers > 0)


IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
IMAGE_SUFFIXES = {".jpeg", ".jpg", ".png", ".bmp", ".webp"}


class _FolderImages(Dataset):
    """(path, label) pairs decoded with Pillow; random-resized crop + flip (train) or resize + center
    crop (eval), then per-channel normalization."""

    def __init__(self, items: list[tuple[Path, int]], size: int, train: bool) -> None:
        self.items, self.size, self.train = items, size, train

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        from PIL import Image

        path, label = self.items[index]
        with Image.open(path) as image:
            image = image.convert("RGB")
            w, h = image.size
            if self.train:
                g = np.random.default_rng()
                for _ in range(10):
                    area = w * h * g.uniform(0.08, 1.0)
                    ratio = np.exp(g.uniform(np.log(3 / 4), np.log(4 / 3)))
                    cw, ch = int(round(np.sqrt(area * ratio))), int(round(np.sqrt(area / ratio)))
                    if 0 < cw <= w and 0 < ch <= h:
                        left, top = g.integers(0, w - cw + 1), g.integers(0, h - ch + 1)
                        break
                else:
                    cw = ch = min(w, h)
                    left, top = (w - cw) // 2, (h - ch) // 2
                image = image.resize((self.size, self.size), box=(left, top, left + cw, top + ch))
                if g.random() < 0.5:
                    image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
            else:
                scale = round(self.size / 0.875) / min(w, h)
                image = image.resize((max(1, round(w * scale)), max(1, round(h * scale))))
                w, h = image.size
                left, top = (w - self.size) // 2, (h - self.size) // 2
                image = image.crop((left, top, left + self.size, top + self.size))
            x = torch.from_numpy(np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0)
        mean, std = torch.tensor(IMAGENET_MEAN)[:, None, None], torch.tensor(IMAGENET_STD)[:, None, None]
        return {"x": (x - mean) / std, "y": torch.tensor(label)}


class ImageFolder(L.LightningDataModule):
    """An ImageNet-style tree `root/train/<class>/*.JPEG` and `root/val/<class>/*.JPEG` (ILSVRC-2012
    with the validation images sorted into class folders), decoded on the fly. The `val` folder
    serves as both validation and test split (as is usual for ImageNet).

    Args:
        root: The folder holding train/ and val/; None: $EXPSPEC_IMAGENET_DIR.
        image_size: Side of the training crops and of the evaluation center crop.
        batch_size: Images per batch.
        num_workers: DataLoader worker processes (decoding JPEGs needs several).
    """

    def __init__(self, root: str | None = None, image_size: Annotated[int, Ge(8)] = 224,
                 batch_size: PositiveInt = 256, num_workers: NonNegativeInt = 8) -> None:
        super().__init__()
        self.root, self.image_size, self.batch_size, self.num_workers = root, image_size, batch_size, num_workers
        self._items: dict[str, list[tuple[Path, int]]] | None = None
        self.classes: list[str] = []

    def _scan(self) -> dict[str, list[tuple[Path, int]]]:
        if self._items is None:
            base = find_root(self.root, "EXPSPEC_IMAGENET_DIR", [], ["train", "val"], "ImageNet-style folder",
                              " (train/<class>/*.JPEG and val/<class>/*.JPEG)")
            self.classes = sorted(p.name for p in (base / "train").iterdir() if p.is_dir())
            index = {c: i for i, c in enumerate(self.classes)}
            items: dict[str, list[tuple[Path, int]]] = {}
            for split in ("train", "val"):
                items[split] = sorted(
                    (p, index[p.parent.name]) for p in (base / split).glob("*/*")
                    if p.suffix.lower() in IMAGE_SUFFIXES and p.parent.name in index
                )
                if not items[split]:
                    raise FileNotFoundError(f"no images under {base / split}/<class>/ (suffixes {sorted(IMAGE_SUFFIXES)})")
            self._items = items
        return self._items

    def info(self) -> dict[str, int]:
        self._scan()
        return {"in_channels": 3, "num_classes": len(self.classes)}

    def _loader(self, split: str, train: bool) -> DataLoader:
        dataset = _FolderImages(self._scan()[split], self.image_size, train)
        kwargs = dict(num_workers=self.num_workers, persistent_workers=self.num_workers > 0)
        if train:
            return train_loader(dataset, self.batch_size, drop_last=True, **kwargs)
        return DataLoader(dataset, batch_size=self.batch_size, **kwargs)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("val", False)
