"""Traffic-like graph time series as lag windows: a synthetic graph with a planted causal subgraph
(stgib's tiny scale) and PEMS-format files from a local folder (paper scale).

Every module here is an `ArrayDataModule` whose splits are chronological (train, then val, then
test windows), with batches {"x": (B, lags, N) the last `lags` values of every node, "y": (B, N) the
value `horizon` steps after the window}, and `graph()` -> {"edge_index": (2, E) int64 numpy
(row 0 the source j, row 1 the target i of a message j -> i), "edge_label": (E,) 1 for a planted
causal edge in any regime, 0 for a distractor (synthetic data only; None for real data),
"num_nodes": N}; synthetic batches also hold "edge_label" (B, E): 1 for the edges causal at the
window's target time (the time-indexed ground truth).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from components.data.base import ArrayDataModule, local_path
from components.types import PositiveInt, ProperFraction


def lag_windows(series: np.ndarray, lags: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows of a (T, N) series: x (T - lags - horizon + 1, lags, N) and the targets y (.., N)
    `horizon` steps after each window's last value."""
    count = len(series) - lags - horizon + 1
    if count <= 0:
        raise ValueError(f"a series of {len(series)} steps has no window of {lags} lags and horizon {horizon}")
    index = np.arange(count)[:, None] + np.arange(lags)[None, :]
    return series[index].astype(np.float32), series[np.arange(count) + lags + horizon - 1].astype(np.float32)


def chronological_splits(x: np.ndarray, y: np.ndarray, val_fraction: float, test_fraction: float) -> dict[str, dict[str, np.ndarray]]:
    """Train, val and test windows in time order (the forecasting protocol: no future leaks into training)."""
    n = len(x)
    n_test, n_val = int(round(n * test_fraction)), int(round(n * val_fraction))
    cut_val, cut_test = n - n_test - n_val, n - n_test
    return {"train": {"x": x[:cut_val], "y": y[:cut_val]}, "val": {"x": x[cut_val:cut_test], "y": y[cut_val:cut_test]},
            "test": {"x": x[cut_test:], "y": y[cut_test:]}}


class GraphWindows(ArrayDataModule):
    """Base of the graph modules: `series()` gives the (T, N) series and the graph; lag windows,
    chronological splits, `graph()` and `info()` are here."""

    def __init__(self, lags: PositiveInt = 6, horizon: PositiveInt = 1, batch_size: PositiveInt = 64,
                 val_fraction: ProperFraction = 0.15, test_fraction: ProperFraction = 0.15) -> None:
        super().__init__(batch_size=batch_size, val_fraction=val_fraction, test_fraction=test_fraction, standardize=False)
        self.lags, self.horizon = lags, horizon
        self._graph: dict[str, Any] | None = None

    def series(self) -> tuple[np.ndarray, dict[str, Any]]:
        raise NotImplementedError

    def _series(self) -> np.ndarray:
        values, self._graph = self.series()
        return values

    def load(self) -> dict[str, dict[str, np.ndarray]]:
        x, y = lag_windows(self._series(), self.lags, self.horizon)
        splits = chronological_splits(x, y, self.val_fraction, self.test_fraction)
        active, regime = self._graph.get("edge_active"), self._graph.get("regime")
        if active is not None:
            labels = active[regime[np.arange(len(x)) + self.lags + self.horizon - 1]].astype(np.float32)
            start = 0
            for split in ("train", "val", "test"):
                count = len(splits[split]["x"])
                splits[split]["edge_label"] = labels[start:start + count]
                start += count
        return splits

    def graph(self) -> dict[str, Any]:
        if self._graph is None:
            self._series()
        return self._graph

    def info(self) -> dict[str, int]:
        return {"num_nodes": int(self.graph()["num_nodes"]), "lags": self.lags}


class SyntheticTrafficGraph(GraphWindows):
    """A directed graph whose flows propagate along a planted causal forest with lags, plus
    distractor edges that carry nothing (the ground truth of edge explanations).

    The N nodes are drawn in a random order; the first `sources` are sources, every later node
    gets one parent among the nodes before it (a causal edge p -> i with a lag in 1..`max_lag` and
    a gain in [0.6, 0.9]). A source follows x(t) = ar x(t-1) + e(t), e ~ N(0, 1); a node with a
    parent x_i(t) = gain x_p(t - lag) + ar x_i(t-1) + noise e_i(t) (its innovations are smaller:
    most of its variance arrives through the edge). Each series is standardized. The graph the
    models see holds every causal edge and distractors, in a shuffled order: every causal edge's
    reverse (i's past is a delayed echo of p's: correlated, not causal), up to `correlated_edges`
    edges into a node from a sibling (same parent) or a grandparent (a two-hop shortcut), whose
    past carries a noisy or delayed copy of the true parent's (correlated with the target, redundant
    given the parent: what neighbouring traffic sensors look like), and `random_edges` pairs of
    unrelated nodes. The draw follows `seed`.

    With `regimes` = R > 1 the routes switch: every non-source node draws R parents (one per
    regime, distinct where it can), and the edge from regime r's parent carries the flow only while
    regime r holds (regimes alternate every `regime_length` steps); the time-indexed ground truth of
    a window is the set of edges active at its target time.
    """

    def __init__(self, num_nodes: PositiveInt = 12, sources: PositiveInt = 3, max_lag: PositiveInt = 3,
                 steps: PositiveInt = 1500, ar: float = 0.5, noise: float = 0.3, correlated_edges: int = 9, random_edges: int = 4,
                 regimes: PositiveInt = 1, regime_length: PositiveInt = 50, seed: int = 0, lags: PositiveInt = 6, horizon: PositiveInt = 1, batch_size: PositiveInt = 64,
                 val_fraction: ProperFraction = 0.15, test_fraction: ProperFraction = 0.15) -> None:
        super().__init__(lags, horizon, batch_size, val_fraction, test_fraction)
        if sources >= num_nodes:
            raise ValueError(f"sources ({sources}) must be fewer than num_nodes ({num_nodes})")
        if max_lag > lags:
            raise ValueError(f"max_lag ({max_lag}) must be <= lags ({lags}): a window must see the lagged parent")
        self.num_nodes, self.sources, self.max_lag, self.steps = num_nodes, sources, max_lag, steps
        self.ar, self.noise, self.random_edges, self.seed = ar, noise, random_edges, seed
        self.correlated_edges, self.regimes, self.regime_length = correlated_edges, regimes, regime_length

    def series(self) -> tuple[np.ndarray, dict[str, Any]]:
        rng = np.random.default_rng(self.seed)
        n = self.num_nodes
        order = rng.permutation(n)
        causal = []  # (parent, child, lag, gain, regime)
        for k in range(self.sources, n):
            choices = rng.permutation(k)
            for r in range(self.regimes):
                parent = order[choices[r % k]]
                causal.append((int(parent), int(order[k]), int(rng.integers(1, self.max_lag + 1)),
                               float(rng.uniform(0.6, 0.9)), r))
        burn = 50
        total = self.steps + burn
        regime_of = (np.arange(total) - burn) // self.regime_length % self.regimes
        x = np.zeros((total, n))
        scale = np.full(n, self.noise)
        scale[order[: self.sources]] = 1.0
        innovations = rng.normal(size=(total, n)) * scale
        for t in range(self.max_lag, total):
            x[t] = self.ar * x[t - 1] + innovations[t]
            for parent, child, lag, gain, r in causal:  # topological order: parents are computed first at lag >= 1
                if r == regime_of[t]:
                    x[t, child] += gain * x[t - lag, parent]
        x = x[burn:]
        x = (x - x.mean(0)) / x.std(0)
        pairs = {(p, c): 1 for p, c, _, _, _ in causal}
        for p, c, _, _, _ in causal:
            pairs.setdefault((c, p), 0)
        parent_of = {c: p for p, c, _, _, r in causal if r == 0}
        correlated = sorted({(s, c) for c, p in parent_of.items() for s, q in parent_of.items() if q == p and s != c}
                            | {(parent_of[p], c) for c, p in parent_of.items() if p in parent_of})
        correlated = [e for e in correlated if e not in pairs]
        for i in rng.permutation(len(correlated))[: self.correlated_edges]:
            pairs[correlated[i]] = 0
        candidates = [(a, b) for a in range(n) for b in range(n) if a != b and (a, b) not in pairs]
        for i in rng.permutation(len(candidates))[: self.random_edges]:
            pairs[candidates[i]] = 0
        edges = list(pairs.items())
        edges = [edges[i] for i in rng.permutation(len(edges))]
        edge_index = np.array([[a for (a, _), _ in edges], [b for (_, b), _ in edges]], dtype=np.int64)
        label = np.array([v for _, v in edges], dtype=np.int64)
        position = {pair: e for e, (pair, _) in enumerate(edges)}
        active = np.zeros((self.regimes, len(edges)), dtype=bool)
        for p, c, _, _, r in causal:
            active[r, position[(p, c)]] = True
        return x, {"edge_index": edge_index, "edge_label": label, "num_nodes": n, "edge_active": active,
                   "regime": regime_of[burn:]}


class TrafficGraphFiles(GraphWindows):
    """PEMS-format traffic data from a local folder (paper scale; never downloaded): `<name>.npz`
    whose array `data` is (T, N) or (T, N, F) (the first feature, flow, is used) and `<name>.csv`
    with the sensor graph as rows `from,to,cost` (one header line); every edge is used in both
    directions. Each node's series is standardized with the statistics of the training part. No
    planted ground truth: `edge_label` is None (the explanation metrics are fidelity and sparsity only).
    The folder is `root`, else $EXPSPEC_TRAFFIC_DIR (e.g. PEMS04 or PEMS08 from the ASTGCN release).
    """

    def __init__(self, name: str = "PEMS08", root: str | None = None, max_steps: PositiveInt | None = None,
                 lags: PositiveInt = 12, horizon: PositiveInt = 3, batch_size: PositiveInt = 64,
                 val_fraction: ProperFraction = 0.2, test_fraction: ProperFraction = 0.2) -> None:
        super().__init__(lags, horizon, batch_size, val_fraction, test_fraction)
        self.name, self.max_steps = name, max_steps
        self.root = local_path("traffic_graph_files", "data.root", root, "EXPSPEC_TRAFFIC_DIR",
                               f"the folder of {name}.npz and {name}.csv", needs=(f"{name}.npz", f"{name}.csv"),
                               how=f"Put {name}.npz (array 'data', (T, N[, F])) and {name}.csv (from,to,cost) in one folder")

    def series(self) -> tuple[np.ndarray, dict[str, Any]]:
        folder = Path(self.root)
        values = np.load(folder / f"{self.name}.npz")["data"]
        values = values[..., 0] if values.ndim == 3 else values
        values = values[: self.max_steps].astype(np.float64)
        cut = int(len(values) * (1 - self.val_fraction - self.test_fraction))
        mean, std = values[:cut].mean(0), values[:cut].std(0) + 1e-8
        rows = np.loadtxt(folder / f"{self.name}.csv", delimiter=",", skiprows=1, ndmin=2)
        a, b = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
        edge_index = np.unique(np.stack([np.concatenate([a, b]), np.concatenate([b, a])]), axis=1)
        return (values - mean) / std, {"edge_index": edge_index, "edge_label": None, "num_nodes": values.shape[1]}
