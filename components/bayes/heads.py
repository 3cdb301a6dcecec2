"""Bayesian last layers: a classifier's head that is a distribution over its weights, trained jointly
(VBLL) or fitted after training (last-layer Laplace), and `with_head`, which puts a new head into
a (pretrained, adapted) model in place of its own.

Both heads output log predictive probabilities (N, C): softmax of them is the predictive, so the
classification metrics (accuracy, ECE, NLL) read them as logits. Both need one pass of the
backbone: the uncertainty lives in the last layer only, its predictive is computed from the
features (VBLL: Monte Carlo over the head's weights, the features fixed; Laplace: the probit
approximation of the linearized predictive, closed form).

- `vbll_head`: a variational Bayesian last layer (Harrison, Willes & Snoek, ICLR 2024) through the
  `vbll` package (the optional extra `.[vbll]`; it installs without changing torch): a Gaussian
  over the weights with a dense (or diagonal, low-rank) covariance, trained with the ELBO's
  deterministic Jensen bound on the softmax likelihood plus `regularization_weight` times the
  KL/Wishart terms. `variational_loss(y)` is that ELBO (its negative) on the last batch the head
  saw in training mode, the predictive NLL in eval mode; the task `bayesian_classification`
  trains on it. PoLAR-VBLL trains the adapters and the head's variational posterior jointly on
  this ELBO (the paper alternates the two; here one optimizer steps both each batch).
- `laplace_head`: a linear head trained as usual (cross-entropy), then, after training,
  `fit_posterior(features, y)` fits a full-GGN Laplace approximation of its weights and bias at
  the trained values, its prior precision tuned on the validation split's NLL (laplace-torch's grid
  search; empirical Bayes without one) (`components.bayes.laplace`,
  gamma_laplace's exact full GGN; the head is small: (in + 1) * out parameters). From then on it
  outputs the probit-approximated predictive log p = log softmax(mu / sqrt(1 + pi/8 var)) (MacKay
  1992), var the diagonal of J Sigma J^T. This is the post-hoc Laplace baseline of the paper,
  on the last layer.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from components.kinds import Model
from components.types import NonNegativeFloat, PositiveFloat, PositiveInt
from framework.extras import require

LOG_FLOOR = 1e-12  # log predictive probabilities are clamped at log(1e-12)


class VBLLHead(nn.Module):
    """A variational Bayesian last layer for classification (vbll.DiscClassification).

    Args:
        in_features: Width of the features the head reads.
        out_features: Number of classes.
        regularization_weight: Weight of the KL (and Wishart noise) terms against the mean
            log-likelihood bound: 1 / (number of training examples) makes the ELBO per example.
        parameterization: Covariance of the weights: "dense" (full per class), "diagonal" or
            "lowrank".
        prior_scale: Scale of the Gaussian prior on the weights (times 2 / in_features).
        wishart_scale: Scale of the Wishart prior on the noise precision.
        samples: Monte Carlo samples of the head's logits for the predictive.
    """

    def __init__(
        self,
        in_features: PositiveInt,
        out_features: PositiveInt,
        regularization_weight: NonNegativeFloat = 1e-3,
        parameterization: Literal["dense", "diagonal", "lowrank"] = "dense",
        prior_scale: PositiveFloat = 1.0,
        wishart_scale: PositiveFloat = 1.0,
        samples: PositiveInt = 20,
    ) -> None:
        super().__init__()
        vbll = require("vbll", "vbll_head")
        self.head = vbll.DiscClassification(in_features, out_features, regularization_weight,
                                            parameterization=parameterization, prior_scale=prior_scale,
                                            wishart_scale=wishart_scale)
        self.samples = samples
        self._last: Any = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._last = self.head(x)
        return self._last.predictive.probs.clamp_min(LOG_FLOOR).log()

    def variational_loss(self, y: torch.Tensor) -> torch.Tensor:
        """The negative ELBO (per example) on the batch of the last forward in training mode; the
        predictive negative log-likelihood in eval mode."""
        if self._last is None:
            raise RuntimeError("vbll_head: variational_loss(y) needs a forward pass first")
        y = y.long().reshape(-1)
        return self._last.train_loss_fn(y) if self.training else self._last.val_loss_fn(y)


class LaplaceHead(nn.Module):
    """A linear head with a post-hoc full-GGN Laplace posterior over its weights and bias.

    Before `fit_posterior` it is an nn.Linear (logits); after, its output is the probit-
    approximated linearized predictive, as log probabilities.

    Args:
        in_features: Width of the features the head reads.
        out_features: Number of classes.
        prior_precision: delta of the isotropic Gaussian prior N(0, 1/delta); None picks it on
            the validation split when the task passes one (lowest predictive NLL over a log
            grid, as laplace-torch's `gridsearch`), else by empirical Bayes (the Laplace
            evidence's maximum, `FullLaplace.optimize_prior_precision`).
    """

    def __init__(self, in_features: PositiveInt, out_features: PositiveInt,
                 prior_precision: PositiveFloat | None = None) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.prior_precision = prior_precision
        # not saved: a loaded head is fitted again at test start (`bayesian_classification`)
        self.register_buffer("fitted", torch.tensor(False), persistent=False)
        self.register_buffer("posterior_cholesky", torch.zeros(0), persistent=False)  # of G + delta I
        self.chosen_precision = math.nan

    def fit_posterior(self, features: torch.Tensor, y: torch.Tensor, val_features: torch.Tensor | None = None,
                      val_y: torch.Tensor | None = None) -> float:
        """Fit the Laplace posterior on the training features (N, in) and labels; returns delta.

        delta: `prior_precision` when set; else, with validation features and labels, the delta of
        the log grid 10^-4 .. 10^4 (`GRID` points) whose probit predictive has the lowest
        validation NLL (laplace-torch's `gridsearch`); else empirical Bayes."""
        from components.bayes.laplace import FullLaplace

        linear = _double_copy(self.linear)
        laplace = FullLaplace.fit(linear, features.detach().double(), y.long().reshape(-1))
        if self.prior_precision is not None:
            delta = float(self.prior_precision)
        elif val_features is not None and val_y is not None:
            delta = self._grid_search(laplace, linear, val_features.detach().double(), val_y.long().reshape(-1))
        else:
            delta = laplace.optimize_prior_precision()
        self.chosen_precision = float(delta)
        self.posterior_cholesky = torch.linalg.cholesky(laplace.posterior_precision(delta))
        self.fitted.fill_(True)
        return float(delta)

    GRID = 41

    @staticmethod
    def _grid_search(laplace: Any, linear: nn.Linear, x: torch.Tensor, y: torch.Tensor) -> float:
        """The grid delta with the lowest probit-predictive NLL on (x, y): one eigendecomposition
        of the GGN, G = Q diag(lambda) Q^T, then var(delta) = sum_i (J q_i)^2 / (lambda_i + delta)."""
        from components.bayes.laplace import output_jacobians

        eigenvalues, vectors = torch.linalg.eigh(laplace.ggn)
        eigenvalues = eigenvalues.clamp_min(0.0)
        jac = output_jacobians(linear, x)  # (N, C, P)
        projected = (jac.flatten(0, 1) @ vectors).pow(2)  # (N C, P)
        with torch.no_grad():
            logits = linear(x)
        best, best_nll = 1.0, math.inf
        for delta in torch.logspace(-4, 4, LaplaceHead.GRID, dtype=torch.float64).tolist():
            variance = (projected / (eigenvalues + delta)).sum(1).view(jac.shape[0], jac.shape[1])
            scaled = logits / torch.sqrt(1.0 + math.pi / 8.0 * variance)
            nll = float(torch.nn.functional.cross_entropy(scaled, y))
            if nll < best_nll:
                best, best_nll = delta, nll
        return best

    def logit_variance(self, x: torch.Tensor) -> torch.Tensor:
        """Diagonal of the linearized predictive covariance of the logits at features x: (N, C)."""
        from components.bayes.laplace import output_jacobians

        jac = output_jacobians(_double_copy(self.linear), x.detach().double())  # (N, C, P)
        whitened = torch.linalg.solve_triangular(self.posterior_cholesky, jac.flatten(0, 1).T, upper=False)
        return whitened.pow(2).sum(0).view(jac.shape[0], jac.shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.linear(x)
        if not bool(self.fitted):
            return logits
        with torch.inference_mode(False), torch.enable_grad():
            variance = self.logit_variance(x.clone())
        scaled = logits / torch.sqrt(1.0 + math.pi / 8.0 * variance.to(logits.dtype))
        return scaled.log_softmax(-1)


def _double_copy(linear: nn.Linear) -> nn.Linear:
    copy = nn.Linear(linear.in_features, linear.out_features, dtype=torch.float64)
    with torch.no_grad():
        copy.weight.copy_(linear.weight.detach())
        copy.bias.copy_(linear.bias.detach())
    return copy


def with_head(base: Model, head: Model, path: str) -> nn.Module:
    """The base model with the submodule at `path` replaced by `head` (trainable), e.g. a pretrained
    MLP whose output layer `net.6` becomes a new linear, VBLL or Laplace head for another task.
    The base's other parameters keep their names and their requires_grad (an adapter wrapper
    around the base has frozen them); a checkpoint of the base loads by name with `strict: false`
    (the old head's tensors are skipped).

    Args:
        base: The model (any model node).
        head: The new head (a model node), built with the right in/out sizes.
        path: Dotted name of the module to replace, as `named_modules` gives it.
    """
    parent_name, _, child = path.rpartition(".")
    modules = dict(base.named_modules())
    if path not in modules or not path:
        raise ValueError(f"path: the base model ({type(base).__name__}) has no submodule {path!r}; its modules: "
                         f"{[n for n in modules if n][:20]}")
    parent = modules[parent_name]
    for param in head.parameters():
        param.requires_grad_(True)
    parent._modules[child] = head
    return base


def variational_heads(model: nn.Module) -> list[nn.Module]:
    """The modules of a model that train on their own objective (`variational_loss(y)`)."""
    return [m for m in model.modules() if callable(getattr(m, "variational_loss", None))]


def posthoc_heads(model: nn.Module) -> list[nn.Module]:
    """The modules of a model that fit a posterior after training (`fit_posterior(features, y)`)."""
    return [m for m in model.modules() if callable(getattr(m, "fit_posterior", None))]
