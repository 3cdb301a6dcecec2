"""Latent debate: a debate over a model's layers as a surrogate for its true/false decisions.

Seed paper: "Latent Debate: A Surrogate Framework for Interpreting LLM Thinking" (Chen, Yin,
Toni; NeurIPS 2026, arXiv 2512.01909; specs/latent_debate/README.md). A model answers a
true/false question with one of two answer tokens. Its hidden states hold latent arguments: each
(layer, position) argument says TRUE with probability q, read by an interpreter:

- `logit_lens`: q = sigmoid(logit_TRUE - logit_FALSE) of the model's own readout (`model.logits`)
  applied to that hidden state;
- `linear_probe`: a logistic regression per (layer, position), fit on the fit split (val) to
  predict the model's own decision from that hidden state, and applied out of sample (to test).

An argument with q > 1/2 supports the claim "the answer is TRUE" with strength 2q - 1, one with
q < 1/2 attacks it with strength 1 - 2q. The arguments and the claim form a quantitative bipolar
argumentation framework (QBAF): a star, every argument a leaf whose strength is its base score,
the claim at the centre with base score `base_score`. A gradual semantics gives the claim's
strength sigma; the surrogate answers TRUE iff sigma > 1/2:

- `dfquad` (DF-QuAD, Rago et al. 2016): v_s = 1 - prod(1 - s) over supporters, v_a likewise over
  attackers; sigma = tau - tau (v_a - v_s) when v_a >= v_s, else tau + (1 - tau)(v_s - v_a).
- `quadratic_energy` (Potyka 2018): E = sum(supporters) - sum(attackers),
  h(E) = max(E, 0)^2 / (1 + max(E, 0)^2); sigma = tau - tau h(-E) + (1 - tau) h(E).

Debate patterns: an argument's agreement with the surrogate's verdict is a = (2q - 1) * (+1 for a
TRUE verdict, -1 for FALSE); a layer's disagreement is the mean over its positions of (1 - a) / 2
(0: all its arguments firmly back the verdict, 1/2: undecided, 1: all firmly oppose it). The
paper's pattern: high disagreement in the middle layers goes with hallucinations (the model's
errors).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import torch
from annotated_types import Ge, MinLen
from torch import nn

from components.types import OpenFraction, PositiveFloat, PositiveInt

Interpreter = Literal["linear_probe", "logit_lens"]
Semantics = Literal["dfquad", "quadratic_energy"]
Layers = Annotated[list[Annotated[int, Ge(0)]], MinLen(1)]


# -- gradual semantics on a star QBAF ----------------------------------------------------------

def dfquad(base: float, supporters: np.ndarray, attackers: np.ndarray) -> np.ndarray:
    """DF-QuAD strength of the claim (module docstring). supporters, attackers: (N, k) strengths
    in [0, 1] (a 0 is an absent argument) -> (N,)."""
    v_s = 1.0 - np.prod(1.0 - supporters, axis=1)
    v_a = 1.0 - np.prod(1.0 - attackers, axis=1)
    return np.where(v_a >= v_s, base - base * (v_a - v_s), base + (1.0 - base) * (v_s - v_a))


def quadratic_energy(base: float, supporters: np.ndarray, attackers: np.ndarray) -> np.ndarray:
    """Quadratic-energy strength of the claim (module docstring); arguments as `dfquad`."""
    energy = supporters.sum(axis=1) - attackers.sum(axis=1)

    def h(e: np.ndarray) -> np.ndarray:
        e = np.maximum(e, 0.0)
        return e * e / (1.0 + e * e)

    return base - base * h(-energy) + (1.0 - base) * h(energy)


SEMANTICS = {"dfquad": dfquad, "quadratic_energy": quadratic_energy}


def claim_strength(q: np.ndarray, semantics: str, base: float) -> np.ndarray:
    """Strength of "the answer is TRUE" given arguments q (N, k) = P(TRUE) of each argument."""
    signed = 2.0 * q - 1.0
    return SEMANTICS[semantics](base, np.clip(signed, 0.0, 1.0), np.clip(-signed, 0.0, 1.0))


def layer_log_odds(q: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    """How firmly each layer backs the verdict, on the log-odds scale: q (N, layers, positions),
    verdict (N,) bool -> (N, layers), the mean over positions of log(q / (1 - q)) * (+1 if the
    verdict is TRUE else -1), q clipped to [1e-6, 1 - 1e-6]."""
    sign = np.where(verdict, 1.0, -1.0)[:, None, None]
    q = np.clip(q, 1e-6, 1.0 - 1e-6)
    return (np.log(q / (1.0 - q)) * sign).mean(axis=2)


def layer_disagreement(q: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    """Disagreement of each layer with the verdict: q (N, layers, positions) = P(TRUE) of each
    argument, verdict (N,) bool -> (N, layers), the mean over positions of (1 - a) / 2 with
    a = (2q - 1) * (+1 if the verdict is TRUE else -1)."""
    sign = np.where(verdict, 1.0, -1.0)[:, None, None]
    return ((1.0 - (2.0 * q - 1.0) * sign) / 2.0).mean(axis=2)


# -- reading the model -------------------------------------------------------------------------

def answer_ids(split: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(TRUE id, FALSE id): the answer tokens, the last position's target of statements labelled
    1 and 0. Both labels must occur, each with one token."""
    target, label = split["y"][:, -1], split["label"]
    ids = []
    for value in (1, 0):
        tokens = torch.unique(target[label == value]).tolist()
        if len(tokens) != 1:
            word = "TRUE" if value else "FALSE"
            raise ValueError(f"latent_debate: the statements labelled {value} ({word}) must share one answer "
                             f"token at the last position; found {tokens or 'none'}")
        ids.append(int(tokens[0]))
    return ids[0], ids[1]


@torch.no_grad()
def read_states(model: nn.Module, split: dict[str, torch.Tensor], layers: list[int], positions: int,
                batch_size: int, ids: tuple[int, int]) -> dict[str, np.ndarray]:
    """Run the model over a split in batches. Returns {"states", "lens", "final", "last"}: states
    (N, layers, positions, d) float32, the hidden states of the last `positions` positions at each
    of `layers` (0: the embedding, i: after block i); lens (N, layers, positions), the logit-lens
    margin logit_TRUE - logit_FALSE of each; final (N,), that margin of the model's output at the
    last position (its answer); last (N, d), the last hidden state there. An "attention_mask" in
    the split is passed to the model."""
    device = next(model.parameters()).device
    x, mask = split["x"], split.get("attention_mask")
    true_id, false_id = ids
    states, lens, final, last = [], [], [], []
    for start in range(0, len(x), batch_size):
        kwargs = {} if mask is None else {"attention_mask": mask[start:start + batch_size].to(device)}
        hidden = model.hidden_states(x[start:start + batch_size].to(device), **kwargs)
        if max(layers) >= len(hidden):
            raise ValueError(f"latent_debate: layers go up to {max(layers)} but the model has {len(hidden)} "
                             f"hidden states (0 = embedding, 1..{len(hidden) - 1} = blocks)")
        picked = torch.stack([hidden[layer][:, -positions:] for layer in layers], dim=1)
        margin = model.logits(picked)
        lens.append((margin[..., true_id] - margin[..., false_id]).float().cpu())
        out = model.logits(hidden[-1][:, -1:])[:, 0]
        final.append((out[:, true_id] - out[:, false_id]).float().cpu())
        states.append(picked.float().cpu())
        last.append(hidden[-1][:, -1].float().cpu())
    return {"states": torch.cat(states).numpy(), "lens": torch.cat(lens).numpy(),
            "final": torch.cat(final).numpy(), "last": torch.cat(last).numpy()}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _probe(c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))


def probe_probabilities(fit: np.ndarray, target: np.ndarray, apply: np.ndarray, c: float) -> np.ndarray:
    """P(target = 1) on `apply` (N, d) of a standardized logistic regression fit on `fit` (M, d),
    `target` (M,) in {0, 1}; a constant target gives that constant."""
    if len(np.unique(target)) < 2:
        return np.full(len(apply), float(target[0]))
    return _probe(c).fit(fit, target).predict_proba(apply)[:, 1]


def auroc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of `score` for flagging `positive` (sklearn's roc_auc_score)."""
    from sklearn.metrics import roc_auc_score

    if positive.all() or not positive.any():
        raise ValueError(f"latent_debate: AUROC needs both errors and correct answers on the test split; "
                         f"the model got {int(positive.sum())} of {len(positive)} wrong")
    return float(roc_auc_score(positive, score))


# -- the analysis ------------------------------------------------------------------------------

class LatentDebate:
    """Build the latent debate of a trained true/false model and measure it (module docstring).

    The model provides `hidden_states(x)` (embedding, then after each block) and `logits(h)` (its
    readout on any hidden state): `causal_lm`, `transformer_lm`, `pretrained_causal_lm`. The splits
    hold statements {"x": (N, L), "y": (N, L), "label": (N,)} whose answer is the next token after
    the last position (`true_false_kb`). Probes and detectors are fit on the `val` split; every
    result is on `test`. The model's decision is the larger of its TRUE and FALSE logits; its
    error, a decision that differs from the label.

    Returns (logged as test/<name>):
        agreement: share of test statements where the surrogate's answer is the model's.
        model_accuracy, error_rate: the model's (errors are the "hallucinations" to flag).
        confidence_auroc: AUROC of 1 - the model's final confidence (max of its TRUE/FALSE
            probabilities) at flagging errors: the baseline.
        disagreement_auroc: AUROC of the debate's disagreement (mean over `layers`) at flagging
            errors; mid_disagreement_auroc: the same over the `middle` layers.
        mid_disagreement_error, mid_disagreement_correct: mean middle-layer disagreement on
            errors and on correct answers; mid_disagreement_p: one-sided Mann-Whitney p-value that
            it is higher on errors.
        debate_detector_auroc: AUROC of a logistic regression on the debate's pattern (each
            layer's disagreement, its log-odds backing of the verdict, and |sigma - 1/2|) fit on
            val errors. Cross-fitted: the val patterns it is fit on come from probes fit on the
            other `folds` - 1 folds of val (out of sample, as the test patterns, whose probes are
            fit on all of val), not from probes fit on the statements they are applied to.
        last_probe_auroc: AUROC of a logistic regression on the last layer's hidden state at the
            answer position fit on val errors (a baseline with the same supervision).

    Args:
        interpreter: How an argument's P(TRUE) is read: `linear_probe` or `logit_lens`.
        layers: Hidden states that argue (0: embedding, i: after block i); None: every block.
        middle: The middle layers of the debate pattern; None: `layers` without its first and
            last quarter (at least one layer).
        positions: Arguments per layer: the last `positions` positions.
        semantics: Gradual semantics of the QBAF: `dfquad` or `quadratic_energy`.
        base_score: Base score tau of the claim (1/2: no prior lean).
        probe_c: Inverse L2 strength of the logistic-regression probes and detectors.
        folds: Folds of val (contiguous) for the cross-fitted patterns the detector is fit on.
        batch_size: Statements per forward pass.
    """

    splits = ("val", "test")

    def __init__(
        self,
        interpreter: Interpreter = "linear_probe",
        layers: Layers | None = None,
        middle: Layers | None = None,
        positions: PositiveInt = 1,
        semantics: Semantics = "dfquad",
        base_score: OpenFraction = 0.5,
        probe_c: PositiveFloat = 1.0,
        folds: Annotated[int, Ge(2)] = 5,
        batch_size: PositiveInt = 512,
    ) -> None:
        if layers is not None and middle is not None and not set(middle) <= set(layers):
            raise ValueError(f"middle must be a subset of layers {layers}, got {middle}")
        self.interpreter, self.layers, self.middle, self.positions = interpreter, layers, middle, positions
        self.semantics, self.base_score, self.probe_c, self.batch_size = semantics, base_score, probe_c, batch_size
        self.folds = folds

    def resolve_layers(self, n_blocks: int) -> tuple[list[int], list[int]]:
        """(layers, middle) for a model with `n_blocks` blocks (Args: the defaults)."""
        layers = list(self.layers) if self.layers is not None else list(range(1, n_blocks + 1))
        if max(layers) > n_blocks:
            raise ValueError(f"latent_debate: layers go up to {max(layers)} but the model has {n_blocks} blocks")
        if self.middle is not None:
            return layers, list(self.middle)
        cut = len(layers) // 4
        return layers, layers[cut:len(layers) - cut] or layers

    def argue(self, fit: dict[str, np.ndarray], test: dict[str, np.ndarray]) -> np.ndarray:
        """P(TRUE) of every test argument (N, layers, positions), read by the interpreter."""
        if self.interpreter == "logit_lens":
            return _sigmoid(test["lens"])
        n, n_layers, n_positions, _ = test["states"].shape
        q = np.empty((n, n_layers, n_positions))
        for i in range(n_layers):
            for j in range(n_positions):
                q[:, i, j] = probe_probabilities(fit["states"][:, i, j], fit["decision"],
                                                 test["states"][:, i, j], self.probe_c)
        return q

    def cross_fit(self, fit: dict[str, np.ndarray]) -> np.ndarray:
        """P(TRUE) of every `fit` argument (N, layers, positions), each fold's read by probes fit
        on the other folds (`folds` contiguous folds): out of sample, as `argue(fit, test)` is."""
        n = len(fit["decision"])
        if n < self.folds:
            raise ValueError(f"latent_debate: {self.folds} folds need at least {self.folds} val statements, got {n}")
        q = np.empty(fit["states"].shape[:3])
        for held in np.array_split(np.arange(n), self.folds):
            rest = np.setdiff1d(np.arange(n), held)
            q[held] = self.argue({k: v[rest] for k, v in fit.items()}, {k: v[held] for k, v in fit.items()})
        return q

    def read(self, model: nn.Module, split: dict[str, torch.Tensor], layers: list[int],
             ids: tuple[int, int]) -> dict[str, np.ndarray]:
        """A split's hidden states, logit-lens margins, the model's decisions and its errors."""
        if split["x"].shape[1] < self.positions:
            raise ValueError(f"positions = {self.positions} exceeds the statements' length {split['x'].shape[1]}")
        read = read_states(model, split, layers, self.positions, self.batch_size, ids)
        decision = read["final"] > 0
        return {**read, "decision": decision.astype(np.int64),
                "error": decision != split["label"].numpy().astype(bool)}

    def __call__(self, model: nn.Module, splits: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        for method in ("hidden_states", "logits"):
            if not callable(getattr(model, method, None)):
                raise ValueError(f"latent_debate needs a model with {method}() (causal_lm, transformer_lm, "
                                 f"pretrained_causal_lm); got {type(model).__name__}")
        was_training = model.training
        model.eval()
        try:
            ids = answer_ids(splits["test"])
            n_blocks = len(model.hidden_states(splits["test"]["x"][:1].to(next(model.parameters()).device))) - 1
            layers, middle = self.resolve_layers(n_blocks)
            fit, test = (self.read(model, splits[name], layers, ids) for name in ("val", "test"))
        finally:
            model.train(was_training)
        return self.measure(fit, test, layers, middle)

    def pattern(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sigma (N,), verdict (N,) bool, disagreement (N, layers), features (N, 2 layers + 1)) of
        arguments q; the features (the detector's) are each layer's disagreement and log-odds
        backing of the verdict, and |sigma - 1/2|."""
        sigma = claim_strength(q.reshape(len(q), -1), self.semantics, self.base_score)
        verdict = sigma > 0.5
        disagreement = layer_disagreement(q, verdict)
        features = np.column_stack([disagreement, layer_log_odds(q, verdict), np.abs(sigma - 0.5)])
        return sigma, verdict, disagreement, features

    def measure(self, fit: dict[str, np.ndarray], test: dict[str, np.ndarray], layers: list[int],
                middle: list[int]) -> dict[str, float]:
        """The results (class docstring) from the read val (`fit`) and test splits."""
        from scipy.stats import mannwhitneyu

        sigma, verdict, disagreement, features = self.pattern(self.argue(fit, test))
        fit_features = self.pattern(self.cross_fit(fit))[3]
        mid = [layers.index(layer) for layer in middle]
        error = test["error"]
        mid_score = disagreement[:, mid].mean(axis=1)
        p_true = _sigmoid(test["final"])
        detector = probe_probabilities(fit_features, fit["error"].astype(np.int64), features, self.probe_c)
        last = probe_probabilities(fit["last"], fit["error"].astype(np.int64), test["last"], self.probe_c)
        return {
            "agreement": float((verdict == test["decision"].astype(bool)).mean()),
            "model_accuracy": float(1.0 - error.mean()),
            "error_rate": float(error.mean()),
            "confidence_auroc": auroc(-np.maximum(p_true, 1.0 - p_true), error),
            "disagreement_auroc": auroc(disagreement.mean(axis=1), error),
            "mid_disagreement_auroc": auroc(mid_score, error),
            "mid_disagreement_error": float(mid_score[error].mean()),
            "mid_disagreement_correct": float(mid_score[~error].mean()),
            "mid_disagreement_p": float(
                mannwhitneyu(mid_score[error], mid_score[~error], alternative="greater").pvalue),
            "debate_detector_auroc": auroc(detector, error),
            "last_probe_auroc": auroc(last, error),
        }
