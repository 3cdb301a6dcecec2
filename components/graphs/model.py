"""The spatio-temporal graph forecaster of stgib, with or without its explanation masks.

Per window x (B, lags, N): a GRU reads each node's lag window (its temporal representation),
concatenated with a learned node embedding, h_i (d = hidden + embedding). One round of message
passing (torch-geometric's `MessagePassing`, sum aggregation) sends along each edge j -> i the
message w_ji * MLP([h_j, h_i]), where w_ji is the edge's weight; a readout MLP([h_i, sum of
messages]) forecasts the node's value.

With `bottleneck: true` (STGIB) the edge weight is a time-indexed mask: for every window and edge,
a scorer MLP([h_j, h_i]) gives a logit, the mask is sigmoid(logit) (a relaxed Bernoulli sample,
Gumbel-sigmoid with `temperature`, while training), so each window has its own explanation
subgraph. With `bottleneck: false` (the black box) every edge weight is 1 unless a caller passes
weights (the attribution baseline differentiates through them).

torch-geometric (extra `graph`) supplies the message passing; imported when the model is built.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from components.types import PositiveInt
from framework.extras import require


def batched_edges(edge_index: torch.Tensor, batch: int, num_nodes: int) -> torch.Tensor:
    """One graph per window: (2, E) -> (2, batch * E), window b's nodes numbered b * N .. b * N + N - 1."""
    offsets = torch.arange(batch, device=edge_index.device) * num_nodes
    return (edge_index[:, None, :] + offsets[None, :, None]).reshape(2, -1)


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, outputs))


class STGraphForecaster(nn.Module):
    """Args:
        num_nodes: N (the data's; checked against it).
        hidden: GRU and message width.
        embedding: Width of the learned node embedding (0: none).
        bottleneck: Learn time-indexed edge masks (STGIB) or use every edge at weight 1 (black box).
        temperature: Of the relaxed Bernoulli masks while training.
    """

    def __init__(self, num_nodes: PositiveInt, hidden: PositiveInt = 16, embedding: int = 8,
                 bottleneck: bool = True, temperature: float = 0.5) -> None:
        super().__init__()
        geometric = require("torch_geometric", "model 'st_graph_forecaster'")
        self.num_nodes, self.bottleneck, self.temperature = num_nodes, bottleneck, temperature
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.embed = nn.Embedding(num_nodes, embedding) if embedding > 0 else None
        width = hidden + max(embedding, 0)

        class EdgeMessages(geometric.nn.MessagePassing):
            def __init__(self) -> None:
                super().__init__(aggr="add")
                self.net = mlp(2 * width, hidden, hidden)

            def forward(self, h: torch.Tensor, edge_index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
                return self.propagate(edge_index, h=h, weight=weight)

            def message(self, h_j: torch.Tensor, h_i: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
                return weight[:, None] * self.net(torch.cat([h_j, h_i], dim=-1))

        self.messages = EdgeMessages()
        self.scorer = mlp(2 * width, hidden, 1) if bottleneck else None
        self.readout = mlp(width + hidden, hidden, 1)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Node representations (B * N, width) of windows x (B, lags, N)."""
        batch, lags, nodes = x.shape
        if nodes != self.num_nodes:
            raise ValueError(f"the windows have {nodes} nodes, the model {self.num_nodes}")
        _, state = self.gru(x.permute(0, 2, 1).reshape(batch * nodes, lags, 1))
        h = state[-1]
        if self.embed is not None:
            h = torch.cat([h, self.embed.weight.repeat(batch, 1)], dim=-1)
        return h

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor | None = None,
                sample: bool = False) -> dict[str, Any]:
        """{"pred": (B, N), "logits": (B, E) mask logits or None, "mask": (B, E) edge weights used}.
        `edge_weight` (B, E) replaces the mask (black box: ones by default)."""
        batch = x.shape[0]
        h = self.encode(x)
        edges = batched_edges(edge_index, batch, self.num_nodes)
        logits = None
        if edge_weight is not None:
            weight = edge_weight.reshape(-1)
        elif self.scorer is not None:
            logits = self.scorer(torch.cat([h[edges[0]], h[edges[1]]], dim=-1)).squeeze(-1)
            if sample:
                u = torch.rand_like(logits).clamp(1e-6, 1 - 1e-6)
                weight = torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / self.temperature)
            else:
                weight = torch.sigmoid(logits)
        else:
            weight = torch.ones(edges.shape[1], device=x.device)
        agg = self.messages(h, edges, weight)
        pred = self.readout(torch.cat([h, agg], dim=-1)).reshape(batch, self.num_nodes)
        return {"pred": pred, "logits": None if logits is None else logits.reshape(batch, -1),
                "mask": weight.reshape(batch, -1)}
