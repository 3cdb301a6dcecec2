"""Unsupervised anomaly-detection data: rows x with a label y (1 anomaly, 0 normal) that only the
evaluation reads.

Protocol (`AnomalyData`): the detector is fitted on contaminated data (anomalies included, labels
unused) and scores rows; AUROC compares the scores with y. With `transductive: true` (the classic
unsupervised protocol of ODDS and PyOD benchmarks) the train, val and test splits are the same
pool: a detector scores the data it was fitted on. With `transductive: false` the pool is split
as by every in-memory data module (`val_fraction`, `test_fraction`), ADBench-style. The pool's
rows are shuffled with `seed` either way, so every batch mixes normal rows and anomalies.

Sources: a synthetic manifold with collective and scattered anomalies (`collective_manifold`),
classes of a dataset that ships with scikit-learn taken as anomalies (`sklearn_anomalies`, the
ODDS recipe: e.g. breast_cancer's malignant class down-sampled), and ODDS `.mat` / ADBench `.npz`
files from a local folder (`odds_file`; paper scale, never downloaded).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import numpy as np
from sklearn import datasets

from components.data.base import Arrays, ArrayDataModule
from components.types import NonNegativeFloat, NonNegativeInt, PositiveInt


class AnomalyData(ArrayDataModule):
    """Base of the anomaly data modules (module docstring): a subclass implements `rows()`.

    Args:
        seed: Seed of the data draw (synthetic rows, down-sampled anomalies) and of the row order.
        transductive: Fit and score the same pool (true), or split it (false).

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(self, seed: int = 0, transductive: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed, self.transductive = seed, transductive

    def rows(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """x (N, d) float and y (N,) in {0, 1}, drawn with `rng` where random."""
        raise NotImplementedError

    def load(self) -> Arrays | dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        x, y = self.rows(rng)
        order = rng.permutation(len(x))
        pool = {"x": np.asarray(x, dtype=np.float32)[order], "y": np.asarray(y, dtype=np.int64)[order]}
        if not self.transductive:
            return pool
        # Separate dicts: the base standardizes each split's "x" in place of the entry.
        return {split: dict(pool) for split in ("train", "val", "test")}


def collective_manifold(
    rng: np.random.Generator, n_normal: int, dim: int, manifold_dim: int, noise: float,
    n_collective: int, cluster_spread: float, cluster_distance: float, n_scattered: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows and labels of `CollectiveManifold` (its docstring states the rule)."""
    lift = rng.normal(size=(manifold_dim, dim))
    mix = rng.normal(size=(dim, dim)) / np.sqrt(dim)

    def on_manifold(n: int) -> np.ndarray:
        return np.tanh(rng.uniform(-1, 1, size=(n, manifold_dim)) @ lift) @ mix

    normal = on_manifold(n_normal) + noise * rng.normal(size=(n_normal, dim))
    direction = rng.normal(size=dim)
    centre = on_manifold(1)[0] + cluster_distance * direction / np.linalg.norm(direction)
    collective = centre + cluster_spread * rng.normal(size=(n_collective, dim))
    scattered = 2.0 * normal.std(axis=0) * rng.normal(size=(n_scattered, dim))
    x = np.vstack([normal, collective, scattered])
    y = np.r_[np.zeros(n_normal), np.ones(n_collective + n_scattered)]
    return x, y


class CollectiveManifold(AnomalyData):
    """Normal rows on a curved low-dimensional manifold, plus a tight cluster of collective
    anomalies off the manifold and scattered anomalies.

    Normal: x = tanh(z A) B + noise * e, z ~ U[-1, 1]^k, A (k x d) with N(0, 1) entries, B (d x d)
    with N(0, 1/d) entries, e ~ N(0, I). Collective: a manifold point moved `cluster_distance`
    along a random unit direction, plus `cluster_spread` * N(0, I) per row (a small "normal
    cluster" that a high-capacity autoencoder learns to reconstruct). Scattered: N(0, (2 sd)^2) per
    feature, sd the normal rows' per-feature standard deviation.

    Args:
        n_normal: Normal rows.
        dim: Feature count d.
        manifold_dim: Manifold dimension k.
        noise: Standard deviation of the normal rows' isotropic noise.
        n_collective: Rows in the anomalous cluster.
        cluster_spread: Standard deviation of the cluster around its centre.
        cluster_distance: Distance of the cluster's centre from its manifold point.
        n_scattered: Scattered anomalies.

    Plus `AnomalyData`'s arguments (seed, transductive) and the base data module's.
    """

    def __init__(
        self,
        n_normal: PositiveInt = 1000,
        dim: PositiveInt = 20,
        manifold_dim: PositiveInt = 3,
        noise: NonNegativeFloat = 0.05,
        n_collective: NonNegativeInt = 50,
        cluster_spread: NonNegativeFloat = 0.05,
        cluster_distance: NonNegativeFloat = 3.0,
        n_scattered: NonNegativeInt = 30,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if n_collective + n_scattered == 0:
            raise ValueError("n_collective + n_scattered must be >= 1: the data needs anomalies to score")
        self.arguments = dict(n_normal=n_normal, dim=dim, manifold_dim=manifold_dim, noise=noise,
                              n_collective=n_collective, cluster_spread=cluster_spread,
                              cluster_distance=cluster_distance, n_scattered=n_scattered)

    def rows(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return collective_manifold(rng, **self.arguments)


LOADERS = {
    "breast_cancer": datasets.load_breast_cancer,
    "wine": datasets.load_wine,
    "digits": datasets.load_digits,
    "iris": datasets.load_iris,
}


def classes_as_anomalies(
    x: np.ndarray, target: np.ndarray, normal_classes: list[int], anomaly_classes: list[int] | None,
    n_anomalies: int | None, rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `normal_classes` (y = 0) and of `anomaly_classes` (y = 1; None: every other class),
    the anomalies down-sampled without replacement to `n_anomalies` (None: all); other rows dropped."""
    known = set(np.unique(target).tolist())
    anomaly_classes = sorted(known - set(normal_classes)) if anomaly_classes is None else anomaly_classes
    unknown = sorted((set(normal_classes) | set(anomaly_classes)) - known)
    if unknown:
        raise ValueError(f"classes {unknown} are not in the data; its classes are {sorted(known)}")
    if set(normal_classes) & set(anomaly_classes):
        raise ValueError(f"normal_classes {normal_classes} and anomaly_classes {anomaly_classes} overlap")
    normal = np.flatnonzero(np.isin(target, normal_classes))
    anomalous = np.flatnonzero(np.isin(target, anomaly_classes))
    if n_anomalies is not None:
        if n_anomalies > len(anomalous):
            raise ValueError(f"n_anomalies is {n_anomalies} but the anomaly classes have {len(anomalous)} rows")
        anomalous = np.sort(rng.choice(anomalous, n_anomalies, replace=False))
    rows = np.r_[normal, anomalous]
    return x[rows], np.r_[np.zeros(len(normal)), np.ones(len(anomalous))]


class SklearnAnomalies(AnomalyData):
    """A dataset that ships with scikit-learn, some classes normal and others anomalous (the ODDS
    recipe: ODDS `wine` is classes 1, 2 normal and class 0 down-sampled to 10; ADBench `WDBC` is
    breast_cancer's benign rows normal and malignant rows down-sampled).

    Args:
        name: Which bundled dataset (features as given, e.g. breast_cancer's 30).
        normal_classes: Class labels of the normal rows (breast_cancer: 1 is benign).
        anomaly_classes: Class labels of the anomalies; null: every class not normal.
        n_anomalies: Down-sample the anomalies to this many rows (drawn with `seed`); null: all.

    Plus `AnomalyData`'s arguments (seed, transductive) and the base data module's.
    """

    def __init__(
        self,
        name: Literal["breast_cancer", "wine", "digits", "iris"],
        normal_classes: list[NonNegativeInt],
        anomaly_classes: list[NonNegativeInt] | None = None,
        n_anomalies: PositiveInt | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if name not in LOADERS:
            raise ValueError(f"name must be one of {sorted(LOADERS)}, got '{name}'")
        if not normal_classes:
            raise ValueError("normal_classes must name at least one class")
        self.name, self.normal_classes, self.anomaly_classes = name, normal_classes, anomaly_classes
        self.n_anomalies = n_anomalies

    def rows(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        bunch = LOADERS[self.name]()
        return classes_as_anomalies(np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target),
                                    self.normal_classes, self.anomaly_classes, self.n_anomalies, rng)


ODDS_ENV = "EXPSPEC_ODDS_DIR"


def read_odds(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """X and y of an ODDS `.mat` (MATLAB v5; v7.3 files are HDF5: convert them with h5py first) or
    an ADBench `.npz` file; y is 1 for outliers."""
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as arrays:
            x, y = arrays["X"], arrays["y"]
    else:
        from scipy.io import loadmat

        try:
            arrays = loadmat(path)
        except NotImplementedError as error:  # scipy's answer to a v7.3 (HDF5) file
            raise ValueError(f"{path} is a MATLAB v7.3 (HDF5) file; save X and y as .npz instead") from error
        x, y = arrays["X"], arrays["y"]
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y).reshape(-1)
    if len(x) != len(y) or not set(np.unique(y).tolist()) <= {0, 1}:
        raise ValueError(f"{path}: expected X (N, d) and y (N,) in {{0, 1}}, got X {x.shape}, y values "
                         f"{sorted(np.unique(y).tolist())[:5]}")
    return x, y


class ODDSFile(AnomalyData):
    """One tabular AD benchmark set (ODDS `<name>.mat` or ADBench `<name>.npz`, arrays X and y)
    from a local folder; nothing is downloaded. A missing file is an error at build time, before
    the run opens, naming the paths tried.

    Args:
        name: The file's stem (`shuttle`, `cardio`, `6_cardio`, ...).
        root: The folder holding it; null: $EXPSPEC_ODDS_DIR.

    Plus `AnomalyData`'s arguments (seed, transductive) and the base data module's.
    """

    def __init__(self, name: str, root: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        folder = root or os.environ.get(ODDS_ENV)
        tried = [Path(folder or ".") / f"{name}{suffix}" for suffix in (".mat", ".npz")]
        found = [p for p in tried if p.is_file()] if folder else []
        if not found:
            where = f"tried {tried[0]} and {tried[1]}" if folder else f"data.root is null and ${ODDS_ENV} is not set"
            raise FileNotFoundError(
                f"anomaly benchmark set '{name}' not found ({where}). Nothing is downloaded: put the ODDS "
                f"'{name}.mat' (odds.cs.stonybrook.edu) or ADBench '{name}.npz' file in a folder and set "
                f"data.root or ${ODDS_ENV} to it.")
        self.name, self.path = name, found[0]

    def rows(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return read_odds(self.path)
