"""framework/runner.py: a `64-true` spec is built with float64 as torch's default dtype."""

from __future__ import annotations

import torch

from framework.runner import default_dtype


def test_default_dtype_follows_the_precision_and_is_restored() -> None:
    assert torch.get_default_dtype() == torch.float32
    with default_dtype("64-true"):
        assert torch.zeros(1).dtype == torch.float64
    assert torch.get_default_dtype() == torch.float32
    with default_dtype("32-true"):
        assert torch.zeros(1).dtype == torch.float32
    try:
        with default_dtype("64-true"):
            raise RuntimeError("a build error")
    except RuntimeError:
        pass
    assert torch.get_default_dtype() == torch.float32
