"""Is EB-Laplace invariant to function-preserving ReLU rescalings? (analysis `laplace_rescaling`)

Seed paper: "Scale-Invariant Empirical-Bayes Laplace Approximation for ReLU Networks"
(gamma_laplace, NeurIPS 2026; OpenReview VCFiwg3qqU). Claims: standard empirical-Bayes Laplace
with an isotropic prior gives different log-evidences, prior precisions and linearized predictive
variances for functionally identical ReLU networks, because the prior norm |theta|^2 and
log det(G + delta I) depend on the point of the scale orbit. Gamma-canonicalized Laplace fits
at the gamma-canonical representative of the orbit (`canonical_gammas`), equivalently under the
isotropic prior transported back to the network's coordinates (`FullLaplace.transported`); for
every gamma in [0, 1] its evidence and predictive are invariant, and gamma is selected jointly
with delta by marginal likelihood.
"""

from __future__ import annotations

import copy
import math
import statistics
from typing import Annotated, Literal

import torch
from annotated_types import MinLen
from torch import nn

from components.bayes.laplace import FullLaplace, output_jacobians
from components.bayes.rescaling import canonical_gammas, parameter_scales, random_gammas, relu_rescale
from components.types import PositiveFloat, PositiveInt

Split = Literal["train", "val", "test"]
Prior = Literal["both", "isotropic", "gamma_canonical"]
DEFAULT_GAMMAS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _spread(values: list[float]) -> float:
    return max(values) - min(values)


def _relative_spread(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return _spread(values) / abs(mean) if mean != 0 else float("inf")


class LaplaceRescaling:
    """Standard vs gamma-canonicalized EB-Laplace across random ReLU rescalings of one network.

    Takes the network and K random per-unit rescalings of it (log scale ~ N(0, log_std^2)), all
    functionally identical. For each of these K + 1 networks, in float64, it fits a full-GGN
    Laplace approximation on `fit_split` and, per prior:

    - isotropic (standard EB-Laplace): prior precision delta I at the network as given; delta
      maximizes the Laplace evidence.
    - gamma_canonical: for each gamma of `gammas`, the isotropic prior at the network's
      gamma-canonical representative, carried back as the precision field delta D_gamma^2; delta
      maximizes the evidence for each gamma, and gamma* is the gamma of the largest of these
      evidences (joint selection of gamma and delta by marginal likelihood, on the grid).

    and the mean linearized predictive variance of the outputs (logits for classification) over
    `eval_split` at the selected prior.

    Returns (called as analysis(model, splits) with splits: name -> {"x", "y"} tensors), for the
    prior the run is about (`prior`), and with `prior: both` for isotropic as below and for
    gamma_canonical with the prefix `canonical_`:
        evidence_spread: max - min of the EB log-evidence over the K + 1 networks (nats).
        evidence_std: their standard deviation (nats).
        variance_spread_rel: (max - min) / mean of the mean predictive variance.
        prior_precision_ratio: max / min of the EB prior precision.
        log_evidence, prior_precision, mean_variance: of the network as given.
      gamma_canonical only, except grid_*:
        selected_gamma: gamma* of the network as given; selected_gamma_spread: max - min of gamma*
            over the K + 1 networks.
        grid_evidence_spread, grid_variance_spread_rel: the largest evidence_spread and
            variance_spread_rel over the gammas of the grid (invariance for every gamma); for
            isotropic, a family of one prior, its evidence_spread and variance_spread_rel.
        gamma_evidence_range: max - min over the grid of the network's EB log-evidence (how much
            the choice of gamma matters).
        evidence_gain_over_balanced: log-evidence at gamma* minus at gamma = 0.5 (norm balancing;
            only when 0.5 is on the grid).
        log_evidence_gamma<g>: the network's EB log-evidence at each gamma g of the grid (`g` as
            Python's `{g:g}` writes it: gamma0.9, gamma-0.3): the curve whose best point is gamma*,
            for a claim to check that the best is not at the grid's edge.
      always:
        function_max_diff: max |f_rescaled(x) - f(x)| over the networks and the fit and eval
            inputs (0 up to float64 rounding: the rescalings preserve the function).

    Args:
        num_rescalings: K, random rescalings besides the network itself.
        log_std: Standard deviation of the log scale per unit.
        seed: Seed of the rescalings (a spec may tie it to the run's: `seed: ${seed}`).
        likelihood: 'classification' (softmax cross-entropy on logits) or 'regression' (Gaussian).
        sigma_noise: Observation noise standard deviation for 'regression'.
        fit_split: Data the Laplace approximation and the evidence are computed on.
        eval_split: Data the predictive variance is averaged over.
        prior: 'isotropic', 'gamma_canonical', or 'both' (the metrics above for each).
        gammas: The grid of the family's gamma for the joint selection (the paper's family is
            [0, 1]; values beyond it continue the same formula, `canonical_gammas`); one value
            fixes gamma.
    """

    def __init__(
        self,
        num_rescalings: PositiveInt = 8,
        log_std: PositiveFloat = 1.0,
        seed: int = 0,
        likelihood: Literal["classification", "regression"] = "classification",
        sigma_noise: PositiveFloat = 1.0,
        fit_split: Split = "train",
        eval_split: Split = "test",
        prior: Prior = "both",
        gammas: Annotated[list[float], MinLen(1)] = list(DEFAULT_GAMMAS),
    ) -> None:
        if likelihood not in ("classification", "regression"):
            raise ValueError(f"likelihood must be 'classification' or 'regression', got '{likelihood}'")
        if prior not in ("both", "isotropic", "gamma_canonical"):
            raise ValueError(f"prior must be 'both', 'isotropic' or 'gamma_canonical', got '{prior}'")
        if not all(math.isfinite(g) for g in gammas) or len(set(gammas)) != len(gammas):
            raise ValueError(f"gammas must be distinct finite numbers, got {list(gammas)}")
        self.num_rescalings, self.log_std, self.seed = num_rescalings, log_std, seed
        self.likelihood, self.sigma_noise = likelihood, sigma_noise
        self.fit_split, self.eval_split = fit_split, eval_split
        self.prior, self.gammas = prior, [float(g) for g in gammas]
        # The splits the posthoc_analysis task collects for this analysis.
        self.splits = tuple(dict.fromkeys((fit_split, eval_split)))

    @staticmethod
    def _eb(laplace: FullLaplace, jacobians: torch.Tensor) -> tuple[float, float, float]:
        """(EB log-evidence, its delta, mean predictive variance at that delta)."""
        delta = laplace.optimize_prior_precision()
        variance = float(laplace.predictive_variance(None, delta, jacobians=jacobians).mean())
        return float(laplace.log_evidence(delta)), delta, variance

    def _gamma_fits(self, net: nn.Module, laplace: FullLaplace, jacobians: torch.Tensor) -> list[tuple[float, float, float]]:
        return [self._eb(laplace.transported(parameter_scales(net, canonical_gammas(net, gamma))), jacobians)
                for gamma in self.gammas]

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
        results: dict[str, float] = {"function_max_diff": function_max_diff}
        isotropic, per_gamma = [], []  # per network: one fit; a fit per gamma
        for net in networks:
            laplace = FullLaplace.fit(net, x, y, self.likelihood, self.sigma_noise)
            jacobians = output_jacobians(net, x_eval)
            if self.prior in ("both", "isotropic"):
                isotropic.append(self._eb(laplace, jacobians))
            if self.prior in ("both", "gamma_canonical"):
                per_gamma.append(self._gamma_fits(net, laplace, jacobians))
        if isotropic:
            results.update(self._summary(isotropic, ""))
            # The isotropic prior is a family of one prior: its grid is itself.
            results["grid_evidence_spread"] = results["evidence_spread"]
            results["grid_variance_spread_rel"] = results["variance_spread_rel"]
        if per_gamma:
            prefix = "canonical_" if self.prior == "both" else ""
            selected = [max(range(len(self.gammas)), key=lambda i: fits[i][0]) for fits in per_gamma]
            results.update(self._summary([fits[i] for fits, i in zip(per_gamma, selected)], prefix))
            chosen = [self.gammas[i] for i in selected]
            columns = [[fits[i] for fits in per_gamma] for i in range(len(self.gammas))]  # per gamma, per network
            own = [fit[0] for fit in per_gamma[0]]
            results[f"{prefix}selected_gamma"] = chosen[0]
            results[f"{prefix}selected_gamma_spread"] = _spread(chosen)
            results[f"{prefix}grid_evidence_spread"] = max(_spread([f[0] for f in c]) for c in columns)
            results[f"{prefix}grid_variance_spread_rel"] = max(_relative_spread([f[2] for f in c]) for c in columns)
            results[f"{prefix}gamma_evidence_range"] = _spread(own)
            if 0.5 in self.gammas:
                results[f"{prefix}evidence_gain_over_balanced"] = max(own) - own[self.gammas.index(0.5)]
            results.update({f"{prefix}log_evidence_gamma{gamma:g}": value for gamma, value in zip(self.gammas, own)})
        return results

    @staticmethod
    def _summary(fits: list[tuple[float, float, float]], prefix: str) -> dict[str, float]:
        evidence, delta, variance = (list(column) for column in zip(*fits))
        return {
            f"{prefix}evidence_spread": _spread(evidence),
            f"{prefix}evidence_std": statistics.stdev(evidence),
            f"{prefix}variance_spread_rel": _relative_spread(variance),
            f"{prefix}prior_precision_ratio": max(delta) / min(delta),
            f"{prefix}log_evidence": evidence[0],
            f"{prefix}prior_precision": delta[0],
            f"{prefix}mean_variance": variance[0],
        }
