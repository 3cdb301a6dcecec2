"""components/data/stream.py: streams in time order, block by block; malformed streams are named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.data.stream import StreamData


class Counting(StreamData):
    def __init__(self, arrays: dict, block: int = 4) -> None:
        super().__init__(block)
        self.arrays = arrays

    def make_streams(self):
        return self.arrays, ["all"], np.zeros(len(self.arrays["mask"]), dtype=np.int64)


def test_blocks_are_consecutive_and_test_is_one_batch() -> None:
    t = np.arange(10.0)
    data = Counting({"x": np.stack([t, -t])[..., None], "y": np.stack([t, -t]), "mask": np.ones((2, 10), bool)})
    blocks = list(data.train_dataloader())
    assert [b["y"][0].tolist() for b in blocks] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert blocks[0]["mask"].dtype == torch.bool and blocks[0]["y"].dtype == torch.float64
    assert [int(b) for b in data.test_dataloader()] == [10]


@pytest.mark.parametrize(("arrays", "message"), [
    ({"x": np.zeros((2, 3, 1)), "mask": np.ones((2, 3), bool)}, r"gave no \['y'\]"),
    ({"x": np.zeros((2, 4, 1)), "y": np.zeros((2, 3)), "mask": np.ones((2, 3), bool)},
     r"must share the \(streams, time\) shape \(2, 3\)"),
])
def test_malformed_streams_are_named(arrays: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Counting(arrays).setup("fit")


def test_block_must_be_positive() -> None:
    with pytest.raises(ValueError, match="block must be >= 1 time step, got 0"):
        Counting({}, block=0)
