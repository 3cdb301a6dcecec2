"""8x8 digits with injected local defects and prompt tokens, for tiny text-to-image experiments.

LoTTS (arXiv 2511.19917) localizes defective regions of generated images; at tiny scale the
defects are known: a 3x3 patch set bright (`blob`) or inverted (`flip`) at a uniform location
(components/diffusion/tiny.py). Each example is a digit from scikit-learn's bundled `digits`,
scaled to [-1, 1], with tokens [class, quality] (quality HIGH for a clean digit, LOW for one with
a defect) and the defect mask (all zeros for a clean digit).
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets

from components.data.base import Arrays, ArrayDataModule
from components.diffusion.tiny import HIGH, LOW, inject_defects
from components.types import NonNegativeInt, PositiveInt, Probability, ProperFraction


class DigitDefects(ArrayDataModule):
    """Digits as (N, 1, 8, 8) images in [-1, 1]; batches {"x", "cond", "defect_mask", "y"}.

    Args:
        defect_fraction: Share of examples that get one injected defect (quality token LOW).
        copies: How many times each of the 1797 digits appears (each copy draws its own defect).
        batch_size: See ArrayDataModule.
        val_fraction: See ArrayDataModule.
        test_fraction: See ArrayDataModule.
        split_seed: Seed of the split and of the defects.
        defect_stream: 0: defects drawn from split_seed alone (the training draws); another value
            draws them from (defect_stream, split_seed), so that a probe set with the same
            split_seed as a training run gets defects other than the ones the model trained on.
        num_workers: See ArrayDataModule.
    """

    def __init__(
        self,
        defect_fraction: Probability = 0.5,
        copies: PositiveInt = 2,
        batch_size: PositiveInt = 64,
        val_fraction: ProperFraction = 0.1,
        test_fraction: ProperFraction = 0.1,
        split_seed: int = 0,
        defect_stream: int = 0,
        num_workers: NonNegativeInt = 0,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, split_seed, False, num_workers)
        self.defect_fraction, self.copies, self.defect_stream = defect_fraction, copies, defect_stream

    def info(self) -> dict[str, int]:
        return {"in_channels": 1}

    def load(self) -> Arrays:
        bunch = datasets.load_digits()
        clean = np.tile((np.asarray(bunch.images, dtype=np.float32) / 16.0)[:, None], (self.copies, 1, 1, 1))
        labels = np.tile(np.asarray(bunch.target, dtype=np.int64), self.copies)
        rng = np.random.default_rng(self.split_seed + 1 if self.defect_stream == 0 else [self.defect_stream, self.split_seed])
        defective, masks = inject_defects(clean, rng)
        has_defect = rng.random(len(clean)) < self.defect_fraction
        x = np.where(has_defect[:, None, None, None], defective, clean)
        masks = masks * has_defect[:, None, None, None]
        cond = np.stack([labels, np.where(has_defect, LOW, HIGH)], axis=1)
        return {"x": x * 2 - 1, "cond": cond, "defect_mask": masks.astype(np.float32), "y": labels}
