"""Tests for components/fairness/metrics.py, against hand-computed fairlearn-style numbers."""

import pytest
import torch

from components.fairness.metrics import DemographicParityGap, EqualOpportunityGap

# 10 rows: group, label, prediction (hand-computed below).
GROUP = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
LABEL = torch.tensor([1, 1, 0, 0, 1, 1, 1, 0, 0, 0])
PRED = torch.tensor([1, 0, 0, 0, 1, 1, 0, 1, 1, 0])
# Selection rates: group 0 1/4, group 1 4/6 -> DP gap 5/12.
# TPR: group 0 1/2 (rows 0, 1), group 1 2/3 (rows 4, 5, 6) -> EO gap 1/6.


def _outputs(kind: str) -> torch.Tensor:
    logit = PRED.float() * 2 - 1
    if kind == "two":
        return torch.stack([-logit, logit], dim=1)
    return logit[:, None] if kind == "one" else logit


@pytest.mark.parametrize("kind", ["two", "one", "flat"])
@pytest.mark.parametrize("metric_cls, expected", [(DemographicParityGap, 5 / 12), (EqualOpportunityGap, 1 / 6)])
def test_gap_matches_hand_computed(metric_cls, expected, kind):
    metric = metric_cls()
    metric.update(_outputs(kind), {"y": LABEL, "group": GROUP})
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("metric_cls, expected", [(DemographicParityGap, 5 / 12), (EqualOpportunityGap, 1 / 6)])
def test_gap_accumulates_over_batches(metric_cls, expected):
    metric = metric_cls()
    outputs = _outputs("two")
    for rows in (slice(0, 3), slice(3, 7), slice(7, 10)):
        metric.update(outputs[rows], {"y": LABEL[rows], "group": GROUP[rows]})
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-6)


def test_gap_is_zero_with_one_group_seen():
    metric = DemographicParityGap()
    metric.update(torch.randn(5, 2), {"y": torch.ones(5, dtype=torch.long), "group": torch.ones(5, dtype=torch.long)})
    assert float(metric.compute()) == 0.0


def test_missing_group_and_out_of_range_group():
    with pytest.raises(KeyError, match=r"demographic_parity_gap needs the sensitive attribute in batch\['group'\]"):
        DemographicParityGap().update(torch.randn(3, 2), {"y": torch.zeros(3, dtype=torch.long)})
    with pytest.raises(ValueError, match=r"batch\['group'\] values must be in \[0, 1\] \(num_groups=2\), got values in \[0, 2\]"):
        EqualOpportunityGap().update(torch.randn(3, 2), {"y": torch.ones(3, dtype=torch.long), "group": torch.tensor([0, 1, 2])})


def test_num_groups_range(argument_problems):
    assert argument_problems("metrics", "demographic_parity_gap", num_groups=1) == {
        "num_groups": "must be >= 2, got integer 1"}
    assert argument_problems("metrics", "equal_opportunity_gap", num_groups=2) == {}
