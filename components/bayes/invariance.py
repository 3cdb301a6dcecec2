"""Is EB-Laplace invariant to function-preserving ReLU rescalings? (analysis `laplace_rescaling`)

Seed paper: "Scale-Invariant Empirical-Bayes Laplace Approximation for ReLU Networks"
(gamma_laplace, NeurIPS 2026; OpenReview VCFiwg3qqU). Claim: standard empirical-Bayes Laplace with
an isotropic prior gives different log-evidences, prior precisions and linearized predictive
variances for functionally identical ReLU networks, because the prior norm |theta|^2 and
log det(G + delta I) depend on the point of the scale orbit; fitting Laplace at the canonical
representative of the orbit (`gamma_canonicalize`) makes all of them invariant.
"""

from __future__ import annotations

import copy
from typing import Literal

import torch
from torch import nn

from components.bayes.laplace import FullLaplace
from components.bayes.rescaling import gamma_canonicalize, random_gammas, relu_rescale

Split = Literal["train", "val", "test"]


def _spread(values: list[float]) -> float:
    return max(values) - min(values)


def _relative_spread(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return _spread(values) / abs(mean) if mean != 0 else float("inf")


class LaplaceRescaling:
    """Standard vs gamma-canonicalized EB-Laplace across random ReLU rescalings of one network.

    Takes the network and K random per-unit rescalings of it (log gamma ~ N(0, log_std^2)), all
    functionally identical. For each of these K + 1 networks, in float64: fit a full-GGN Laplace
    approximation on `fit_split`, choose the prior precision delta by maximizing the Laplace
    evidence, and compute the mean linearized predictive variance of the outputs (logits for
    classification) over `eval_split`; once at the network as given (standard) and once at its
    gamma-canonical representative (canonical).

    Returns (called as analysis(model, splits) with splits: name -> {"x", "y"} tensors):
        evidence_spread: max - min of the standard EB log-evidence over the K + 1 networks (nats).
        evidence_std: their standard deviation (nats).
        variance_spread_rel: (max - min) / mean of the standard mean predictive variance.
        prior_precision_ratio: max / min of the standard EB prior precision.
        canonical_evidence_spread, canonical_evidence_std, canonical_variance_spread_rel,
        canonical_prior_precision_ratio: the same for canonicalized Laplace.
        function_max_diff: max |f_rescaled(x) - f(x)| over the networks and the fit and eval
            inputs (0 up to float64 rounding: the rescalings preserve the function).
        log_evidence, canonical_log_evidence: EB log-evidence of the network as given, and of its
            canonical representative (nats).
        mean_variance, canonical_mean_variance: its mean predictive variance, both ways.

    Args:
        num_rescalings: K, random rescalings besides the network itself.
        log_std: Standard deviation of log gamma per unit.
        seed: Seed of the rescalings (independent of the run's seed).
        likelihood: 'classification' (softmax cross-entropy on logits) or 'regression' (Gaussian).
        sigma_noise: Observation noise standard deviation for 'regression'.
        fit_split: Data the Laplace approximation and the evidence are computed on.
        eval_split: Data the predictive variance is averaged over.
    """

    def __init__(
        self,
        num_rescalings: int = 8,
        log_std: float = 1.0,
        seed: int = 0,
        likelihood: Literal["classification", "regression"] = "classification",
        sigma_noise: float = 1.0,
        fit_split: Split = "train",
        eval_split: Split = "test",
    ) -> None:
        if num_rescalings < 1:
            raise ValueError(f"num_rescalings must be >= 1, got {num_rescalings}")
        if log_std <= 0:
            raise ValueError(f"log_std must be > 0, got {log_std}")
        if likelihood not in ("classification", "regression"):
            raise ValueError(f"likelihood must be 'classification' or 'regression', got '{likelihood}'")
        if sigma_noise <= 0:
            raise ValueError(f"sigma_noise must be > 0, got {sigma_noise}")
        self.num_rescalings, self.log_std, self.seed = num_rescalings, log_std, seed
        self.likelihood, self.sigma_noise = likelihood, sigma_noise
        self.fit_split, self.eval_split = fit_split, eval_split
        # The splits the posthoc_analysis task collects for this analysis.
        self.splits = tuple(dict.fromkeys((fit_split, eval_split)))

    def _fit(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, x_eval: torch.Tensor) -> tuple[float, float, float]:
        laplace = FullLaplace.fit(model, x, y, self.likelihood, self.sigma_noise)
        delta = laplace.optimize_prior_precision()
        evidence = float(laplace.log_evidence(delta))
        variance = float(laplace.predictive_variance(x_eval, delta).mean())
        return evidence, delta, variance

    def __call__(self, model: nn.Module, splits: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        # float64 throughout: the canonical spread is compared with 1e-6 nats.
        base = copy.deepcopy(model).double().eval()
        device = next(base.parameters()).device
        x = splits[self.fit_split]["x"].to(device, torch.float64)
        y = splits[self.fit_split]["y"].to(device)
        x_eval = splits[self.eval_split]["x"].to(device, torch.float64)
        generator = torch.Generator().manual_seed(self.seed)
        networks = [base] + [
            relu_rescale(base, [g.to(device) for g in random_gammas(base, generator, self.log_std)])
            for _ in range(self.num_rescalings)
        ]
        with torch.no_grad():
            reference = (base(x), base(x_eval))
            function_max_diff = max(
                float((net(inputs) - ref).abs().max())
                for net in networks for inputs, ref in zip((x, x_eval), reference)
            )
        standard = [self._fit(net, x, y, x_eval) for net in networks]
        canonical = [self._fit(gamma_canonicalize(net), x, y, x_eval) for net in networks]
        results: dict[str, float] = {"function_max_diff": function_max_diff}
        for prefix, fits in (("", standard), ("canonical_", canonical)):
            evidence, delta, variance = (list(column) for column in zip(*fits))
            results[f"{prefix}evidence_spread"] = _spread(evidence)
            results[f"{prefix}evidence_std"] = float(torch.tensor(evidence, dtype=torch.float64).std())
            results[f"{prefix}variance_spread_rel"] = _relative_spread(variance)
            results[f"{prefix}prior_precision_ratio"] = max(delta) / min(delta)
            results[f"{prefix}log_evidence"] = evidence[0]
            results[f"{prefix}mean_variance"] = variance[0]
        return results
