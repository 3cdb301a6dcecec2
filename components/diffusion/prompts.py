"""Prompts for sampling runs (test-time scaling, generation benchmarks): no training data.

Batches are {"prompt": list[str], "index": LongTensor}; the test and predict loaders hold the
same prompts (train/val are empty, so a sampling spec runs `phases: [test]` or `[predict]`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader
from components.types import PositiveInt


class PromptSet(L.LightningDataModule):
    """A fixed list of prompts, from the spec or a text file (one prompt per line).

    Args:
        prompts: The prompts (give this or `file`).
        file: A UTF-8 text file, one prompt per line; blank lines and lines starting with '#'
            are skipped; relative paths are taken from the working directory.
        repeat: Each prompt appears this many times (consecutively).
        limit: Keep only the first `limit` prompts after repeating (null: all).
        batch_size: Prompts per batch.
    """

    def __init__(
        self,
        prompts: list[str] | None = None,
        file: str | None = None,
        repeat: PositiveInt = 1,
        limit: PositiveInt | None = None,
        batch_size: PositiveInt = 8,
    ) -> None:
        super().__init__()
        if (prompts is None) == (file is None):
            raise ValueError("give exactly one of prompts and file")
        if prompts is not None and not prompts:
            raise ValueError("prompts must not be empty")
        self.source, self.file, self.repeat, self.limit, self.batch_size = prompts, file, repeat, limit, batch_size

    def prompts(self) -> list[str]:
        if self.source is not None:
            base = list(self.source)
        else:
            path = Path(self.file)  # type: ignore[arg-type]
            if not path.is_file():
                raise FileNotFoundError(f"prompt file not found: {path}")
            base = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
        out = [p for p in base for _ in range(self.repeat)]
        return out[: self.limit] if self.limit else out

    def _loader(self) -> DataLoader:
        items = [{"prompt": p, "index": i} for i, p in enumerate(self.prompts())]
        return DataLoader(items, batch_size=self.batch_size, shuffle=False, collate_fn=_collate)

    def test_dataloader(self) -> DataLoader:
        return self._loader()

    def predict_dataloader(self) -> DataLoader:
        return self._loader()


def _collate(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"prompt": [i["prompt"] for i in items], "index": torch.tensor([i["index"] for i in items])}
