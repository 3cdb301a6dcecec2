"""The oracle's edit judgement, checked in closed form with an oracle whose logits are known."""

from __future__ import annotations

import math

import numpy as np

import pytest
import torch

from components.editing.oracle import FactorOracle, judge
from components.editing.shapes import CARDINALITIES, render, sample_factors


class ReadingOracle(FactorOracle):
    """Reads factor j's value from pixel (0, 0, j) of the image: logit `sharpness` on that value."""

    def __init__(self, sharpness: float) -> None:
        super().__init__()
        self.sharpness = sharpness

    def forward(self, images: torch.Tensor) -> list[torch.Tensor]:
        values = images[:, 0, 0, :5].long()
        return [self.sharpness * torch.nn.functional.one_hot(values[:, j], k).float() for j, k in enumerate(CARDINALITIES)]


def image_of(factors: list[int]) -> torch.Tensor:
    image = torch.zeros(1, 3, 16, 16)
    image[0, 0, 0, :5] = torch.tensor(factors, dtype=torch.float32)
    return image


def test_judge_hard_and_soft_scores() -> None:
    oracle = ReadingOracle(sharpness=2.0)
    source = image_of([0, 0, 0, 0, 0]).repeat(2, 1, 1, 1)
    edited = torch.cat([image_of([0, 2, 0, 0, 0]),   # did what was asked (colour -> 2), nothing else
                        image_of([1, 1, 0, 2, 0])])  # colour -> 1 (not 2), and shape and y moved too
    verdict = judge(oracle, source, edited, torch.tensor([1, 1]), torch.tensor([2, 2]))
    assert verdict["success"].tolist() == [1.0, 0.0]
    assert verdict["unintended_rate"].tolist() == [0.0, 0.5]   # 0 of 4, 2 of 4 other factors moved
    top3, off3 = math.exp(2) / (math.exp(2) + 2), 1 / (math.exp(2) + 2)   # softmax of a 3-way one-hot x 2
    top2 = math.exp(2) / (math.exp(2) + 1)
    assert verdict["implemented"].tolist() == pytest.approx([top3, off3])
    # unintended: mean over the 4 other factors of 1 - p(source's reading)
    first = (3 * (1 - top3) + (1 - top2)) / 4
    second = ((1 - off3) + (1 - top3) + (1 - off3) + (1 - top2)) / 4
    assert verdict["unintended"].tolist() == pytest.approx([first, second])


def train_oracle(images: torch.Tensor, factors: torch.Tensor, steps: int) -> FactorOracle:
    oracle = FactorOracle()
    optimizer = torch.optim.Adam(oracle.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = oracle.loss(images, factors)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return oracle


def test_oracle_reads_rendered_shapes_after_training() -> None:
    torch.manual_seed(0)
    factors = torch.as_tensor(sample_factors(256, np.random.default_rng(0)))
    images = torch.as_tensor(render(factors.numpy())[0])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny convolutions: more threads only contend
    try:
        oracle = train_oracle(images, factors, steps=100)
    finally:
        torch.set_num_threads(threads)
    assert (oracle.predict(images) == factors).float().mean() >= 0.95
