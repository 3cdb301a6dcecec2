"""fvu: 0 for a perfect reconstruction, 1 for the mean, the textbook formula in between."""

import pytest
import torch

from components.sae.metrics import FractionOfVarianceUnexplained


def test_fvu_values():
    torch.manual_seed(0)
    x = torch.randn(100, 5) * torch.arange(1.0, 6.0) + 3.0
    metric = FractionOfVarianceUnexplained()
    metric.update(x, {"x": x})
    assert metric.compute() == 0.0
    metric.reset()
    metric.update(x.mean(0).expand_as(x), {"x": x})
    assert metric.compute() == pytest.approx(1.0, abs=1e-6)
    metric.reset()
    x_hat = x + 0.1 * torch.randn_like(x)
    for part in range(4):  # accumulated over batches = computed at once
        metric.update(x_hat[25 * part : 25 * part + 25], {"x": x[25 * part : 25 * part + 25]})
    expected = ((x - x_hat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    assert metric.compute() == pytest.approx(float(expected), rel=1e-5)


def test_fvu_errors():
    with pytest.raises(RuntimeError, match=r"fvu: compute\(\) before any update\(\)"):
        FractionOfVarianceUnexplained().compute()
    with pytest.raises(ValueError, match=r"fvu: outputs of shape \(2, 3\) do not match x of shape \(2, 4\)"):
        FractionOfVarianceUnexplained().update(torch.zeros(2, 3), {"x": torch.zeros(2, 4)})
