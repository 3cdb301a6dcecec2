"""Classification with a Bayesian last layer: trained on the head's own objective when it has one
(a VBLL head's ELBO), with a posterior fitted after training when the head asks for one (a
last-layer Laplace head), and otherwise the plain `classification` task (a deterministic head,
the spec's `loss`). One task for the three arms of a Bayesian fine-tuning comparison, so that
they share data, steps, metrics and logging.

Training loss: the sum of `variational_loss(y)` over the model's variational heads
(`components.bayes.heads.variational_heads`) when it has any, else `loss(outputs, batch)`. In
val/test the variational heads give their predictive NLL, logged as `<split>/loss`.

At the start of testing (once the model is trained or loaded), each post-hoc head
(`posthoc_heads`) fits its posterior on the training split (its prior tuned on the validation
split with `tune_prior_on_val`): the model runs on the split in eval
mode, the head's inputs (features) are captured, and `fit_posterior(features, y)` is called; the
prior precision it picked is logged as `test/prior_precision`. The test metrics then read the
heads' predictive. Logged keys: those of `classification`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Literal

import torch
from torch import nn

from components.bayes.heads import posthoc_heads, variational_heads
from components.tasks.posthoc import collect_splits
from components.tasks.supervised import Classification


class BayesianClassification(Classification):
    """Classification whose last layer may be variational (trained on its ELBO) or post-hoc (a
    posterior fitted on the training split before testing); see the module docstring.

    Args:
        model: The network (built from `model:`), e.g. `with_head` around an adapted backbone.
        optimizer: Factory called with the parameters.
        loss: The loss of a model without variational heads (runtime, from `loss:`); a model with
            one trains on its ELBO, and a `loss:` section is then an error.
        scheduler, metrics, train_metrics, log_train_metrics: as `classification`.
        posterior_split: The split a post-hoc head's posterior is fitted on.
        tune_prior_on_val: Pass the validation split's features to `fit_posterior` too, for the
            head to tune its prior on (a Laplace head's prior precision by validation NLL).
    """

    LOGGED_METRICS = ("{split}/loss", "{split}/loss.{term}", "{split}/{metric}", "train/{metric}_step",
                      "test/prior_precision")

    def __init__(
        self,
        model: nn.Module,
        optimizer: Callable[..., torch.optim.Optimizer],
        loss: nn.Module | None = None,
        scheduler: Callable[..., dict[str, Any]] | None = None,
        metrics: dict[str, Any] | None = None,
        train_metrics: bool = True,
        log_train_metrics: Literal["interval", "step"] = "interval",
        posterior_split: Literal["train", "val"] = "train",
        tune_prior_on_val: bool = True,
    ) -> None:
        heads = variational_heads(model)
        if heads and loss is not None:
            raise ValueError(f"the model has a variational head ({type(heads[0]).__name__}) that trains on its "
                             "ELBO: remove the `loss:` section")
        if not heads and loss is None:
            raise ValueError("the model has no variational head: give a `loss:` section (e.g. cross_entropy)")
        super().__init__(model, loss, optimizer, scheduler, metrics, train_metrics, log_train_metrics)
        self.posterior_split = posterior_split
        self.tune_prior_on_val = tune_prior_on_val
        self.prior_precisions: list[float] = []

    def _step(self, batch: dict[str, torch.Tensor], split: str) -> torch.Tensor:
        outputs = self.model(batch["x"])
        heads = variational_heads(self.model)
        if heads:
            loss = sum(head.variational_loss(batch["y"]) for head in heads)
        else:
            loss = self.loss(outputs, batch)
        self.log_step(split, loss, outputs, batch)
        return loss

    def fit_posteriors(self, datamodule: Any) -> list[float]:
        """Fit every post-hoc head on `posterior_split` (module docstring); their priors' precisions."""
        heads = posthoc_heads(self.model)
        if not heads:
            return []
        names = (self.posterior_split,) + (("val",) if self.tune_prior_on_val else ())
        splits = collect_splits(datamodule, names)
        features = {name: self._head_inputs(heads, splits[name]["x"]) for name in names}
        precisions = []
        with torch.inference_mode(False), torch.enable_grad():
            for head in heads:
                extra = {}
                if self.tune_prior_on_val:
                    extra = {"val_features": features["val"][id(head)], "val_y": splits["val"]["y"].to(self.device)}
                precisions.append(head.fit_posterior(features[self.posterior_split][id(head)],
                                                     splits[self.posterior_split]["y"].to(self.device), **extra))
        return precisions

    def _head_inputs(self, heads: list[nn.Module], x: torch.Tensor) -> dict[int, torch.Tensor]:
        """The inputs (features) each head receives when the model runs on x in eval mode."""
        captured: dict[int, list[torch.Tensor]] = {id(h): [] for h in heads}
        hooks = [h.register_forward_pre_hook(lambda m, args: captured[id(m)].append(args[0].detach().clone()))
                 for h in heads]
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode(False), torch.no_grad():
                x = x.to(self.device)
                for start in range(0, len(x), 512):
                    self.model(x[start:start + 512])
        finally:
            for hook in hooks:
                hook.remove()
            self.model.train(was_training)
        return {key: torch.cat(value) for key, value in captured.items()}

    def on_test_start(self) -> None:
        self.prior_precisions = self.fit_posteriors(self.trainer.datamodule)

    def on_test_epoch_end(self) -> None:
        super().on_test_epoch_end()
        if self.prior_precisions:
            self.log("test/prior_precision", float(math.fsum(self.prior_precisions) / len(self.prior_precisions)))
