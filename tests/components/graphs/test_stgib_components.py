"""components/graphs: the synthetic traffic graph (planted switching routes, distractors, lag windows
in time order), the edge-masked forecaster, the information-bottleneck loss, the explanation
metrics of the graph_forecasting task on a tiny run, and PEMS-format files from a local folder."""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from components.graphs.data import SyntheticTrafficGraph, TrafficGraphFiles, chronological_splits, lag_windows
from components.graphs.model import STGraphForecaster, batched_edges
from components.graphs.task import GraphForecasting, bernoulli_kl


def test_lag_windows_and_chronological_splits() -> None:
    series = np.arange(20, dtype=float).reshape(10, 2)
    x, y = lag_windows(series, lags=3, horizon=2)
    assert x.shape == (6, 3, 2) and y.shape == (6, 2)
    assert x[0, :, 0].tolist() == [0, 2, 4] and y[0, 0] == 8      # target 2 steps after the window's last value
    splits = chronological_splits(x, y, 1 / 6, 1 / 6)
    assert [len(splits[s]["x"]) for s in ("train", "val", "test")] == [4, 1, 1]
    assert splits["test"]["y"][0, 0] == y[-1, 0]                    # test is the latest window


def test_synthetic_graph_plants_one_parent_per_regime_and_the_flow_follows_it() -> None:
    data = SyntheticTrafficGraph(num_nodes=8, sources=2, steps=600, regimes=2, regime_length=50, seed=3)
    graph = data.graph()
    edges, label, active = graph["edge_index"], graph["edge_label"], graph["edge_active"]
    assert label.sum() == 2 * (8 - 2) and active.shape == (2, edges.shape[1])
    assert (active.sum(0) <= label).all() and active.sum() == label.sum()  # each causal edge active in one regime
    assert len({tuple(e) for e in edges.T}) == edges.shape[1]                # no duplicate edge
    for p, c in edges.T[label == 1]:
        assert (c, p) in {tuple(e) for e in edges.T}                         # its reverse is a distractor
    splits = data.load()
    assert splits["train"]["edge_label"].shape == (len(splits["train"]["x"]), edges.shape[1])
    # the time-indexed labels switch: both regimes' edge sets appear among the windows
    assert len({row.tobytes() for row in splits["train"]["edge_label"]}) == 2
    # same seed, same draw; another seed, another graph
    assert np.array_equal(SyntheticTrafficGraph(num_nodes=8, sources=2, steps=600, regimes=2, seed=3).graph()["edge_index"], edges)
    assert not np.array_equal(SyntheticTrafficGraph(num_nodes=8, sources=2, steps=600, regimes=2, seed=4).graph()["edge_index"], edges)


def test_batched_edges_offsets_each_window() -> None:
    edges = torch.tensor([[0, 1], [1, 2]])
    assert batched_edges(edges, 2, 3).tolist() == [[0, 1, 3, 4], [1, 2, 4, 5]]


def test_forecaster_masks_and_black_box() -> None:
    torch.manual_seed(0)
    edges = torch.tensor([[0, 1, 2], [1, 2, 0]])
    x = torch.randn(4, 6, 3)
    model = STGraphForecaster(num_nodes=3, hidden=8, embedding=4, bottleneck=True)
    out = model(x, edges)
    assert out["pred"].shape == (4, 3) and out["logits"].shape == (4, 3)
    assert torch.allclose(out["mask"], torch.sigmoid(out["logits"]))
    assert not torch.equal(model(x, edges, sample=True)["mask"], out["mask"])   # relaxed samples while training
    black = STGraphForecaster(num_nodes=3, hidden=8, embedding=4, bottleneck=False)
    out = black(x, edges)
    assert out["logits"] is None and torch.equal(out["mask"], torch.ones(4, 3))
    # zero edge weights cut the graph: the forecast of node 1 no longer depends on node 0's window
    cut = black(x, edges, edge_weight=torch.zeros(4, 3))["pred"]
    x2 = x.clone()
    x2[:, :, 0] += 1.0
    assert torch.allclose(black(x2, edges, edge_weight=torch.zeros(4, 3))["pred"][:, 1], cut[:, 1])
    with pytest.raises(ValueError, match="nodes"):
        black(torch.randn(2, 6, 4), edges)


def test_bernoulli_kl_is_zero_at_the_prior_and_positive_elsewhere() -> None:
    prior = 0.3
    logit = torch.log(torch.tensor([prior / (1 - prior)]))
    assert bernoulli_kl(logit, prior).abs() < 1e-5
    assert bernoulli_kl(torch.tensor([3.0]), prior) > 0.5


def test_task_rejects_beta_without_masks() -> None:
    model = STGraphForecaster(num_nodes=3, bottleneck=False)
    with pytest.raises(ValueError, match="beta > 0"):
        GraphForecasting(model, torch.optim.Adam, beta=0.1)


def _run(bottleneck: bool, beta: float, attribution: str = "none") -> dict[str, float]:
    L.seed_everything(0)
    data = SyntheticTrafficGraph(num_nodes=6, sources=2, steps=400, regimes=2, seed=0, batch_size=64)
    model = STGraphForecaster(num_nodes=6, hidden=8, embedding=4, bottleneck=bottleneck)
    task = GraphForecasting(model, lambda p: torch.optim.Adam(p, lr=0.03), beta=beta, attribution=attribution,
                            ig_steps=4)
    trainer = L.Trainer(max_epochs=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(task, datamodule=data)
    return {k: float(v) for k, v in trainer.test(task, datamodule=data, verbose=False)[0].items()}


def test_stgib_run_logs_forecast_and_explanation_metrics() -> None:
    metrics = _run(bottleneck=True, beta=0.1)
    for key in ("test/mae", "test/mae_persistence", "test/mask_mean", "test/edge_auroc_mask",
                "test/edge_auroc_mask_t", "test/mae_masked_out", "test/edge_auroc_random"):
        assert np.isfinite(metrics[key]), key
    assert 0.0 < metrics["test/mask_mean"] < 1.0


def test_black_box_run_logs_the_integrated_gradients_baseline() -> None:
    pytest.importorskip("captum")
    metrics = _run(bottleneck=False, beta=0.0, attribution="integrated_gradients")
    assert 0.0 <= metrics["test/edge_auroc_attribution_t"] <= 1.0 and "test/edge_auroc_mask_t" not in metrics


def test_traffic_files_fail_early_without_them_and_read_the_pems_layout(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("EXPSPEC_TRAFFIC_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="EXPSPEC_TRAFFIC_DIR"):
        TrafficGraphFiles(name="PEMS08")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "PEMS08.npz", data=rng.random((60, 4, 3)))
    (tmp_path / "PEMS08.csv").write_text("from,to,cost\n0,1,1.0\n1,2,2.0\n2,3,1.5\n")
    data = TrafficGraphFiles(name="PEMS08", root=str(tmp_path), lags=4, horizon=2)
    graph = data.graph()
    assert graph["num_nodes"] == 4 and graph["edge_label"] is None and graph["edge_index"].shape == (2, 6)
    splits = data.load()
    assert splits["train"]["x"].shape[1:] == (4, 4) and "edge_label" not in splits["train"]
