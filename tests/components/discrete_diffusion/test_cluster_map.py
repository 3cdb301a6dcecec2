"""components/discrete_diffusion/cluster_map.py: Gamma is column-stochastic in every kind; the
information-retention regularizer is 0 for a balanced hard partition and log C for a collapsed
map; the hierarchy report reads a planted partition back."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from components.discrete_diffusion.cluster_map import ClusterMap, hierarchy_report, info_retention, mutual_information

PLANTED = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])  # cluster 3 plays the function tokens


@pytest.mark.parametrize("kind", ["learnable", "planted", "collapsed"])
def test_every_kind_is_column_stochastic(kind: str) -> None:
    gamma = ClusterMap(4, 8, kind, clusters=PLANTED, generator=torch.Generator().manual_seed(0)).gamma()
    assert gamma.shape == (4, 8) and torch.allclose(gamma.sum(0), torch.ones(8))


def test_info_retention_is_zero_for_a_balanced_partition_and_log_c_when_collapsed() -> None:
    uniform = torch.full((8,), 1 / 8)
    planted = ClusterMap(4, 8, "planted", clusters=PLANTED).gamma()
    assert float(mutual_information(planted, uniform)) == pytest.approx(math.log(4))
    assert float(info_retention(planted, uniform)) == pytest.approx(0.0, abs=1e-6)
    assert float(info_retention(ClusterMap(4, 8, "collapsed").gamma(), uniform)) == pytest.approx(math.log(4))


def test_info_retention_alone_sharpens_a_near_uniform_map() -> None:
    cluster_map = ClusterMap(4, 8, "learnable", init_scale=0.5, generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.Adam(cluster_map.parameters(), lr=0.1)
    uniform = torch.full((8,), 1 / 8)
    before = float(info_retention(cluster_map.gamma(), uniform))
    for _ in range(200):
        optimizer.zero_grad()
        info_retention(cluster_map.gamma(), uniform).backward()
        optimizer.step()
    after = float(info_retention(cluster_map.gamma(), uniform))
    assert after < 0.1 * before and float(cluster_map.gamma().max(0).values.min()) > 0.99  # sharp columns


def test_the_report_reads_a_planted_partition_back() -> None:
    truth = PLANTED.numpy()
    report = hierarchy_report(ClusterMap(4, 8, "planted", clusters=PLANTED[[2, 3, 4, 5, 6, 7, 0, 1]]).gamma(), truth, 3)
    assert report["ari"] == pytest.approx(1.0)  # cluster names do not matter
    assert report["gamma_entropy_function"] == report["gamma_entropy_content"] == report["gamma_entropy_gap"] == 0
    assert report["largest_cluster_share"] == 0.25 and report["cluster_information"] == pytest.approx(1.0)
    soft_function = ClusterMap(4, 8, "planted", clusters=PLANTED).gamma()
    soft_function[:, 6:] = 0.25  # function tokens spread over every cluster
    report = hierarchy_report(soft_function, truth, 3)
    assert report["gamma_entropy_function"] == pytest.approx(math.log(4)) and report["gamma_entropy_gap"] > 1.3


def test_the_report_of_a_collapsed_map_says_degenerate() -> None:
    report = hierarchy_report(ClusterMap(4, 8, "collapsed").gamma(), PLANTED.numpy(), 3)
    assert report["cluster_information"] == pytest.approx(0.0, abs=1e-6) and report["largest_cluster_share"] == 1.0
    assert report["ari"] == pytest.approx(0.0)


def test_planted_needs_a_cluster_per_token() -> None:
    with pytest.raises(ValueError, match="planted needs the cluster \\(< 4\\) of each of the 8 tokens"):
        ClusterMap(4, 8, "planted", clusters=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="kind must be one of learnable, planted, collapsed, got 'kmeans'"):
        ClusterMap(4, 8, "kmeans")
    assert np.isfinite(ClusterMap(4, 8, "planted", clusters=PLANTED).log_gamma().exp().numpy()).all()
