"""Spike adding: a synthetic stand-in for SHD-Adding (sequence classification that needs memory).

Each "digit" d of {0, ..., num_digits - 1} is a fixed spike-rate template over `channels` input
channels and `window` steps: every (channel, step) bin fires with probability `rate_on` with
chance `density`, else with `rate_off`. Templates come from `template_seed` alone, so every run
sees the same digits. A sequence of `steps` steps holds digit a in its first half and digit b in
its second, each starting at a random step of its half; every bin also fires at the background
rate `rate_off`; spikes are independent Bernoulli draws (binned Poisson). The target is a + b
(2 num_digits - 1 classes): a model must remember the first digit until the second arrives, as
for SHD-Adding (two Spiking Heidelberg Digits in a row, target their sum).

Batches are {"x": (B, steps, channels) float in {0, 1}, "y": (B,) long}. Splits are drawn
independently from `seed`. Used by elm_budget (specs/elm_budget/).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from annotated_types import Ge

from components.data.base import Arrays, ArrayDataModule
from components.types import PositiveInt, Probability


def digit_templates(template_seed: int, num_digits: int, channels: int, window: int, density: float,
                    rate_on: float, rate_off: float) -> np.ndarray:
    """(num_digits, window, channels) firing probabilities: rate_on where a bin is on (chance
    `density`), rate_off elsewhere."""
    rng = np.random.default_rng(template_seed)
    on = rng.random((num_digits, window, channels)) < density
    return np.where(on, rate_on, rate_off)


def spike_adding_samples(rng: np.random.Generator, count: int, templates: np.ndarray, steps: int,
                         rate_off: float) -> Arrays:
    """`count` sequences (module docstring): {"x": (count, steps, channels) float32, "y": (count,) int64}."""
    num_digits, window, channels = templates.shape
    half = steps // 2
    digits = rng.integers(0, num_digits, size=(count, 2))
    rates = np.full((count, steps, channels), rate_off)
    starts = np.stack([rng.integers(0, half - window + 1, size=count),
                       half + rng.integers(0, steps - half - window + 1, size=count)], axis=1)
    offsets = np.arange(window)
    for slot in range(2):
        rows = np.arange(count)[:, None]
        rates[rows, starts[:, slot, None] + offsets] = templates[digits[:, slot]]
    x = (rng.random(rates.shape) < rates).astype(np.float32)
    return {"x": x, "y": digits.sum(axis=1).astype(np.int64)}


class SpikeAdding(ArrayDataModule):
    """Two spike-template digits in a row; the target is their sum (module docstring).

    Args:
        num_digits: Digits 0..num_digits-1 (classes: 2 num_digits - 1).
        channels: Input channels.
        steps: Steps per sequence; each half must hold a window.
        window: Steps of one digit's template.
        density: Share of a template's bins that are on.
        rate_on: Firing probability of an on bin.
        rate_off: Firing probability of every other bin (background noise).
        num_train: Training sequences.
        num_val: Validation sequences.
        num_test: Test sequences.
        batch_size: Sequences per batch.
        seed: Seed of the sampled sequences (train, val, test drawn in that order).
        template_seed: Seed of the digit templates (the task itself).
    """

    def __init__(
        self,
        num_digits: Annotated[int, Ge(2)] = 5,
        channels: PositiveInt = 32,
        steps: Annotated[int, Ge(2)] = 40,
        window: PositiveInt = 10,
        density: Probability = 0.25,
        rate_on: Probability = 0.6,
        rate_off: Probability = 0.05,
        num_train: PositiveInt = 4096,
        num_val: PositiveInt = 512,
        num_test: PositiveInt = 1024,
        batch_size: PositiveInt = 64,
        seed: int = 0,
        template_seed: int = 0,
    ) -> None:
        super().__init__(batch_size=batch_size, standardize=False)
        if window > steps // 2:
            raise ValueError(f"window must fit in half the sequence, <= steps // 2 = {steps // 2}, got {window}")
        self.templates = digit_templates(template_seed, num_digits, channels, window, density, rate_on, rate_off)
        self.steps, self.rate_off, self.seed = steps, rate_off, seed
        self.sizes = {"train": num_train, "val": num_val, "test": num_test}

    def load(self) -> dict[str, Arrays]:
        rng = np.random.default_rng(self.seed)
        return {split: spike_adding_samples(rng, count, self.templates, self.steps, self.rate_off)
                for split, count in self.sizes.items()}

    def info(self) -> dict[str, int]:
        """in_features (channels), num_classes (2 num_digits - 1) and seq_len, which the
        `classification` task checks against the model."""
        num_digits, _, channels = self.templates.shape
        return {"in_features": channels, "num_classes": 2 * num_digits - 1, "seq_len": self.steps}
