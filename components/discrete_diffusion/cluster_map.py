"""The token -> cluster map Gamma of LHDLM, its information-retention regularizer, and the numbers
that say whether a learned hierarchy is meaningful.

Gamma is C x V and column-stochastic: column x is token x's distribution over the C clusters
(`ClusterMap`). The paper's failure mode: when the same Gamma defines the forward targets and the
model's cluster predictions (Gamma p), the ELBO's mask term KL(Gamma[:, x] || Gamma p) is 0 for a
collapsed Gamma (all columns equal), so training drifts to a hierarchy that carries no information.
The regularizer keeps the information the cluster carries about the token:

    info_retention = log C - I(X; K),   I(X; K) = H(sum_x p(x) Gamma[:, x]) - sum_x p(x) H(Gamma[:, x]),

p the token frequencies (of the batch); 0 for a balanced hard partition, log C for a collapsed map.
(The paper's exact regularizer is not in the abstract; this one is the direct reading of
"information retention", README.)
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score
from torch import nn

KINDS = ("learnable", "planted", "collapsed")


def entropy(probs: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """-sum p log p along dim (0 log 0 = 0), nats."""
    return -torch.special.xlogy(probs, probs).sum(dim)


def mutual_information(gamma: torch.Tensor, token_probs: torch.Tensor) -> torch.Tensor:
    """I(X; K) in nats for X ~ token_probs (V,) and K ~ Gamma[:, X] (gamma (C, V))."""
    return entropy(gamma @ token_probs) - (token_probs * entropy(gamma, 0)).sum()


def info_retention(gamma: torch.Tensor, token_probs: torch.Tensor) -> torch.Tensor:
    """log C - I(X; K) >= 0 (module docstring)."""
    return np.log(gamma.shape[0]) - mutual_information(gamma, token_probs)


class ClusterMap(nn.Module):
    """Gamma (C, V), every column a distribution over clusters.

    Args:
        num_clusters: C.
        vocab_size: V.
        kind: `learnable` (softmax over clusters of free logits, LHDLM), `planted` (one-hot of the
            given `clusters`, fixed: HDLM with a known partition) or `collapsed` (uniform columns,
            fixed: MDLM's limit).
        clusters: The cluster of every token (V,) for `planted`.
        init_scale: Standard deviation of the initial logits of `learnable` (near-uniform columns).
        generator: Draws the initial logits.
    """

    def __init__(self, num_clusters: int, vocab_size: int, kind: Literal["learnable", "planted", "collapsed"],
                 clusters: torch.Tensor | None = None, init_scale: float = 0.1,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.kind, self.num_clusters, self.vocab_size = kind, num_clusters, vocab_size
        if kind == "learnable":
            self.logits = nn.Parameter(init_scale * torch.randn(num_clusters, vocab_size, generator=generator))
        elif kind == "planted":
            if clusters is None or clusters.shape != (vocab_size,) or int(clusters.max()) >= num_clusters:
                raise ValueError(f"planted needs the cluster (< {num_clusters}) of each of the {vocab_size} tokens")
            one_hot = torch.nn.functional.one_hot(clusters.long(), num_clusters).T.float()
            self.register_buffer("fixed", one_hot.log())
        else:
            self.register_buffer("fixed", torch.full((num_clusters, vocab_size), -float(np.log(num_clusters))))

    def log_gamma(self) -> torch.Tensor:
        """log Gamma (C, V); -inf where Gamma is 0."""
        return torch.log_softmax(self.logits, dim=0) if self.kind == "learnable" else self.fixed

    def gamma(self) -> torch.Tensor:
        return self.log_gamma().exp()


def hierarchy_report(gamma: torch.Tensor, true_clusters: np.ndarray, function_cluster: int) -> dict[str, float]:
    """Whether Gamma (C, V) recovers a planted partition (true_clusters (V,), the function tokens
    in cluster `function_cluster`):

    - ari: adjusted Rand index of argmax-Gamma against the true clusters, over the content tokens;
    - gamma_entropy_function, gamma_entropy_content: mean entropy (nats) of Gamma[:, x] over the
      function tokens and over the content tokens; gamma_entropy_gap, the first minus the second
      (> 0: function tokens are the cluster-agnostic ones);
    - largest_cluster_share: the share of all tokens whose argmax is the most frequent cluster;
    - cluster_information: I(X; K) / log C for uniform X (1 for a balanced hard map of C clusters
      when V is a multiple of C, 0 for a collapsed one)."""
    gamma = gamma.detach().float().cpu()
    assigned = gamma.argmax(0).numpy()
    content = true_clusters != function_cluster
    column_entropy = entropy(gamma, 0).numpy()
    uniform = torch.full((gamma.shape[1],), 1.0 / gamma.shape[1])
    function_entropy, content_entropy = float(column_entropy[~content].mean()), float(column_entropy[content].mean())
    return {
        "ari": float(adjusted_rand_score(true_clusters[content], assigned[content])),
        "gamma_entropy_function": function_entropy,
        "gamma_entropy_content": content_entropy,
        "gamma_entropy_gap": function_entropy - content_entropy,
        "largest_cluster_share": float(np.bincount(assigned).max() / len(assigned)),
        "cluster_information": float(mutual_information(gamma, uniform) / np.log(gamma.shape[0])),
    }
