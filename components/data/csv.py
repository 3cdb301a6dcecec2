"""A table from a CSV file: named feature columns, a target column, optionally a group column."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from annotated_types import MinLen

from components.data.base import Arrays, ArrayDataModule


def _encode(values: pd.Series) -> tuple[np.ndarray, list]:
    """Label-encode to 0..K-1 in sorted order of the unique values; returns codes and classes."""
    classes = sorted(values.unique().tolist())
    lookup = {value: code for code, value in enumerate(classes)}
    return values.map(lookup).to_numpy(dtype=np.int64), classes


class CSVTable(ArrayDataModule):
    """Rows of a CSV file read with pandas, split into train/val/test by the base class.

    Numeric feature columns are used as they are; every other feature column (strings,
    categoricals, booleans) is one-hot encoded with `pd.get_dummies`, so x is wider than
    `features` when there are categorical columns (`info()` reports the final width). A
    classification target and the group column are label-encoded to 0..K-1 in sorted order of
    their unique values; the orders are kept in `target_classes` and `group_classes` after loading.
    A regression target is float32. Rows with a missing value in a used column are an error.
    The file is read in `load()` (at setup), not at construction.

    Args:
        path: The CSV file, relative to the working directory or absolute.
        features: Columns that make up x, in order.
        target: Column that holds y.
        group: Column with a sensitive attribute, returned as batch["group"]; None for none.
        task: 'classification' (label-encoded long y) or 'regression' (float y).

    Plus the base data module's arguments (batch_size, val_fraction, test_fraction, split_seed,
    standardize, num_workers; see `ArrayDataModule`);
    `standardize` scales the one-hot columns too.
    """

    def __init__(
        self,
        path: str,
        features: Annotated[list[str], MinLen(1)],
        target: str,
        group: str | None = None,
        task: Literal["classification", "regression"] = "classification",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be one of ['classification', 'regression'], got '{task}'")
        used = [*features, target] + ([group] if group is not None else [])
        duplicates = sorted({c for c in used if used.count(c) > 1})
        if duplicates:
            raise ValueError(
                f"a column may be used once among features, target and group, got {duplicates} twice"
            )
        self.path, self.features, self.target = path, list(features), target
        self.group, self.task = group, task
        self.target_classes: list | None = None
        self.group_classes: list | None = None

    def load(self) -> Arrays:
        path = Path(self.path)
        if not path.is_file():
            raise FileNotFoundError(f"CSVTable: no such file '{self.path}' (resolved to {path.resolve()})")
        frame = pd.read_csv(path)
        used = [*self.features, self.target] + ([self.group] if self.group is not None else [])
        available = list(frame.columns)
        for column in used:
            if column not in frame.columns:
                raise ValueError(
                    f"CSVTable: column '{column}' not in {self.path}; "
                    f"available columns: {', '.join(map(str, available))}"
                )
        missing = [c for c in used if frame[c].isna().any()]
        if missing:
            raise ValueError(f"CSVTable: columns with missing values in {self.path}: {', '.join(missing)}")
        x_frame = frame[self.features]
        categorical = [
            c for c in self.features
            if not pd.api.types.is_numeric_dtype(x_frame[c]) or pd.api.types.is_bool_dtype(x_frame[c])
        ]
        x_frame = pd.get_dummies(x_frame, columns=categorical, dtype=np.float32)
        self.feature_names = [str(c) for c in x_frame.columns]
        out: Arrays = {"x": x_frame.to_numpy(dtype=np.float32)}
        if self.task == "classification":
            out["y"], self.target_classes = _encode(frame[self.target])
        else:
            if not pd.api.types.is_numeric_dtype(frame[self.target]):
                raise ValueError(
                    f"CSVTable: task 'regression' needs a numeric target, column '{self.target}' is not numeric"
                )
            out["y"] = frame[self.target].to_numpy(dtype=np.float32)
        if self.group is not None:
            out["group"], self.group_classes = _encode(frame[self.group])
        return out
