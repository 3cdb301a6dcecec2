"""One torch thread for these tests, as for runs (hardware.threads): on a loaded 2-core machine two
threads made the small matrix ops here (33 x 33 solves, matrix exponentials) up to 80x slower."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def float64() -> Iterator[None]:
    """float64 as torch's default dtype (what the runner sets while building a `64-true` spec)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)
