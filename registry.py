"""The name -> component tables: the only place a spec's `type:` strings resolve.

Each table maps a snake_case name to a lazy ``"module:attr"`` target; nothing is imported until a
spec asks for that name, so this module (and `exp validate`) never imports torch. A target is a
class or a function whose typed signature is the component's schema: every parameter not listed
as runtime-supplied is an argument the spec may (or, without a default, must) give.

Nested components are declared in a signature with the aliases in `components.kinds`
(``terms: list[Loss]``); the builder builds them first and passes the objects.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any


class UnknownComponent(KeyError):
    """A spec named a component that no table holds."""

    def __init__(self, kind: str, name: str, matches: list[str], known: list[str]) -> None:
        self.kind, self.name, self.matches, self.known = kind, name, matches, known
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = f"unknown {self.kind} '{self.name}'."
        if self.matches:
            return f"{text} Did you mean '{self.matches[0]}'?"
        return f"{text} Known {self.kind}s: {', '.join(self.known)}."

    def __str__(self) -> str:
        return self.message


class Registry:
    """One kind's table: name -> lazy "module:attr" target.

    Args:
        kind: Singular noun used in messages ("loss", "optimizer").
        entries: name -> "module:attr".
        runtime: Parameters the builder supplies at build time; a spec may not set them.
        factory: Build a ``functools.partial`` the task calls with the runtime arguments, instead of
            an object (optimizers, schedulers).
    """

    def __init__(
        self,
        kind: str,
        entries: Mapping[str, str],
        runtime: tuple[str, ...] = (),
        factory: bool = False,
    ) -> None:
        self.kind, self.runtime, self.factory = kind, runtime, factory
        self._entries: dict[str, str] = {}
        for name, target in entries.items():
            self.add(name, target)

    def add(self, name: str, target: str) -> None:
        """Register `name`; a second registration of the same name is an error naming the first."""
        if name in self._entries:
            raise ValueError(
                f"{self.kind} '{name}' is already registered as {self._entries[name]}; "
                f"refusing to re-register it as {target}"
            )
        if ":" not in target:
            raise ValueError(f"{self.kind} '{name}': target must be 'module:attr', got '{target}'")
        self._entries[name] = target

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def target(self, name: str) -> str:
        if name not in self._entries:
            known = self.names()
            matches = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            raise UnknownComponent(self.kind, name, matches, known)
        return self._entries[name]

    def load(self, name: str) -> Any:
        """Import and return the class or function registered as `name`."""
        module, _, attr = self.target(name).partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


# Built with the spec's arguments; nn.Module called as model(x) -> outputs.
MODELS = Registry("model", {
    "mlp": "components.models.mlp:MLP",
    "small_cnn": "components.models.cnn:SmallCNN",
    "binary_mlp": "components.models.binary:BinaryMLP",
    "binary_resnet": "components.models.binary:BinaryResNet",
    "transformer_lm": "components.models.transformer_lm:TransformerLM",
    "topk_sae": "components.models.sae:TopKSAE",
    "batchtopk_sae": "components.models.sae:BatchTopKSAE",
    "pretrained_causal_lm": "components.models.pretrained_lm:PretrainedCausalLM",
    "tiny_token_unet": "components.diffusion.tiny:TinyTokenUNet",
    "diffusers_pipeline": "components.diffusion.pipelines:DiffusersPipeline",
})

# A LightningDataModule built with the spec's arguments; batches are dicts of tensors
# ("x", "y", and "group" where the data has a sensitive attribute). `info()` reports the sizes the
# builder checks against the spec (in_features, in_channels, num_classes, num_targets).
DATA = Registry("data module", {
    "synthetic_classification": "components.data.synthetic:SyntheticClassification",
    "synthetic_regression": "components.data.synthetic:SyntheticRegression",
    "synthetic_fair_tabular": "components.data.fair:SyntheticFairTabular",
    "sklearn_dataset": "components.data.sklearn:SklearnDataset",
    "csv_table": "components.data.csv:CSVTable",
    "uci_adult": "components.data.fair:UCIAdult",
    "oracle_steps": "components.data.oracle:OracleSteps",
    "fashion_mnist": "components.data.images:FashionMNIST",
    "cifar": "components.data.images:CIFAR",
    "image_folder": "components.data.images:ImageFolder",
    "char_text": "components.data.text:CharText",
    "token_file": "components.data.text:TokenFile",
    "activation_buffer": "components.data.activations:ActivationBuffer",
    "digit_defects": "components.data.digit_defects:DigitDefects",
    "prompt_set": "components.data.prompts:PromptSet",
})

# nn.Module built with the spec's arguments (every loss takes `weight`, default 1.0);
# called as loss(outputs, batch) -> scalar tensor, unweighted; `weighted_sum` applies the weights.
LOSSES = Registry("loss", {
    "cross_entropy": "components.losses.basic:CrossEntropy",
    "mse": "components.losses.basic:MSE",
    "bce": "components.losses.basic:BCE",
    "weighted_sum": "components.losses.basic:WeightedSum",
    "cvm_dependence": "components.losses.fairness:CvMDependence",
    "hsic": "components.losses.fairness:HSIC",
})

# A factory: the task calls optimizer(params) -> torch.optim.Optimizer.
OPTIMIZERS = Registry("optimizer", {
    "sgd": "torch.optim:SGD",
    "adam": "torch.optim:Adam",
    "adamw": "torch.optim:AdamW",
}, runtime=("params",), factory=True)

# A factory: the task calls scheduler(optimizer, total_steps) -> Lightning lr-scheduler config
# ({"scheduler": ..., "interval": "step" | "epoch"}).
SCHEDULERS = Registry("scheduler", {
    "cosine": "components.optim.schedulers:cosine_with_warmup",
    "step": "components.optim.schedulers:step_decay",
}, runtime=("optimizer", "total_steps"), factory=True)

# A torchmetrics.Metric built with the spec's arguments; updated as metric.update(outputs, batch)
# and logged as "<stage>/<name>".
METRICS = Registry("metric", {
    "accuracy": "components.metrics.standard:Accuracy",
    "auroc": "components.metrics.standard:AUROC",
    "f1": "components.metrics.standard:F1",
    "mse": "components.metrics.standard:MeanSquaredError",
    "demographic_parity_gap": "components.metrics.fairness:DemographicParityGap",
    "equal_opportunity_gap": "components.metrics.fairness:EqualOpportunityGap",
    "fvu": "components.metrics.reconstruction:FractionOfVarianceUnexplained",
    "nfe": "components.metrics.sampling:NFE",
    "verifier_score": "components.metrics.sampling:VerifierScore",
    "outside_mask_change": "components.metrics.sampling:OutsideMaskChange",
    "mask_iou": "components.metrics.sampling:MaskIoU",
    "random_mask_iou": "components.metrics.sampling:RandomMaskIoU",
})

# A lightning.pytorch.Callback built with the spec's arguments.
CALLBACKS = Registry("callback", {
    "checkpoint": "lightning.pytorch.callbacks:ModelCheckpoint",
    "early_stopping": "lightning.pytorch.callbacks:EarlyStopping",
    "lr_monitor": "lightning.pytorch.callbacks:LearningRateMonitor",
    "progress_bar": "components.callbacks.progress:progress_bar",
    "progressive_binarization": "components.callbacks.progressive_binarization:ProgressiveBinarization",
})

# Built with the spec's arguments; called as analysis(model, splits) -> dict[str, float], where splits
# maps "train"/"val"/"test" to that split's tensors as one batch dict; an analysis names the splits it
# needs in an attribute `splits` (default train and test). The posthoc_analysis task logs "test/<name>".
ANALYSES = Registry("analysis", {
    "laplace_rescaling": "components.bayes.invariance:LaplaceRescaling",
})

# A game for algorithm studies, nested in a task's `problem:`: an nn.Module of float64 buffers with
# dim_x, dim_y, project_x(x), project_y(y), grad(x, y, generator) -> (gx, gy) (noisy oracle: exact
# gradient + sigma * N(0, I)), gap(x, y) (exact primal-dual gap), center(), sample(batch, generator).
PROBLEMS = Registry("problem", {
    "bilinear_game": "components.problems.games:BilinearGame",
    "quadratic_bilinear_game": "components.problems.games:QuadraticGame",
})

# Nested in a minimax task's `algorithm:`: reset(problem, x, y, horizon) once, then
# step(problem, x, y, t, generator) -> (x, y) per iteration; step_size(t), regularization(t) and
# oracle_calls_per_step describe it.
MINIMAX_ALGORITHMS = Registry("minimax algorithm", {
    "seg": "components.optim.minimax:StochasticExtragradient",
    "sogda": "components.optim.minimax:StochasticOptimisticGDA",
    "perturbed_seg": "components.optim.minimax:PerturbedExtragradient",
    "perturbed_sogda": "components.optim.minimax:PerturbedOptimisticGDA",
})

# Nested in a sampling task's `sampler:`: called as sampler(model, batch) -> outputs dict ("images"
# (B, C, H, W) in [0, 1], "scores", "nfe", "masks", ...); contract in components/diffusion/sampling.py.
SAMPLERS = Registry("sampler", {
    "best_of_n": "components.diffusion.sampling:BestOfN",
    "lotts": "components.diffusion.sampling:LoTTS",
    "localization_probe": "components.diffusion.sampling:LocalizationProbe",
})

# Nested in a sampler's `verifier:`: called as verifier(images, prompts) -> (B,) scores, higher better.
VERIFIERS = Registry("verifier", {
    "tiny_digit_verifier": "components.diffusion.verifiers:TinyDigitVerifier",
    "image_reward": "components.diffusion.verifiers:ImageRewardVerifier",
    "hpsv2": "components.diffusion.verifiers:HPSv2Verifier",
    "pixel_contrast": "components.diffusion.verifiers:PixelContrast",
})

# Nested in a sampler's `localizer:`: turns recorded attention maps into a (B, 1, h, w) defect mask.
LOCALIZERS = Registry("localizer", {
    "quality_contrast": "components.diffusion.localize:QualityContrastLocalizer",
})

# A LightningModule built with the spec's `task:` arguments plus the built sections, passed by the
# builder as model=, loss=, optimizer= (factory), scheduler= (factory or None), metrics= (dict) -- each
# only if the task's signature names it; a spec section the task does not take is an error.
TASKS = Registry("task", {
    "classification": "components.tasks.supervised:Classification",
    "regression": "components.tasks.supervised:Regression",
    "loss_profile": "components.tasks.profiling:LossProfile",
    "posthoc_analysis": "components.tasks.posthoc:PosthocAnalysis",
    "minimax": "components.tasks.minimax:Minimax",
    "language_modeling": "components.tasks.language_modeling:LanguageModeling",
    "sae_training": "components.tasks.sae_training:SAETraining",
    "diffusion_training": "components.tasks.diffusion:DiffusionTraining",
    "sampling": "components.tasks.diffusion:Sampling",
}, runtime=("model", "loss", "optimizer", "scheduler", "metrics"))

# Spec section -> the table its component node (or list of nodes) resolves in.
KINDS: dict[str, Registry] = {
    "models": MODELS,
    "data": DATA,
    "losses": LOSSES,
    "optimizers": OPTIMIZERS,
    "schedulers": SCHEDULERS,
    "metrics": METRICS,
    "callbacks": CALLBACKS,
    "tasks": TASKS,
    "analyses": ANALYSES,
    "problems": PROBLEMS,
    "minimax_algorithms": MINIMAX_ALGORITHMS,
    "samplers": SAMPLERS,
    "verifiers": VERIFIERS,
    "localizers": LOCALIZERS,
}
