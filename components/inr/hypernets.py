"""Hypernetworks that map a signal (its pixels as (coordinate, value) points) to the weights of a
target INR (target.py), and the per-signal fitting they are compared with (attn_hypernet_inr).

Every model here is called as model(x) with x (B, P, coord_dims + C): each signal's P points, a
coordinate then its C values; it returns the values (B, P, C) that the generated INR gives at those
coordinates (reconstruction). Models that take gradient steps on the target INR inside their
forward pass (learned init + K steps, the MLP rollout, per-signal fitting) do so in evaluation too:
`_grad_enabled` lifts Lightning's inference mode for them.

- `AttnRolloutHypernet` (the paper's method, rebuilt from its abstract): output-neuron tokens, and
  a token-space rollout of K optimization steps in which five cross-attention modules play the five
  roles of one gradient step (forward activation, output error, back-propagated delta, weight
  gradient, update); weights are read out of pairs of neuron tokens. No parameter's shape depends
  on the target's width.
- `TransINRHypernet` (Chen & Wang, ECCV 2022): a transformer over pixel tokens and one learned
  weight token per output neuron; each token emits its neuron's row of weights as a change of
  learned base weights.
- `MLPRolloutHypernet`: the optimization-oriented MLP hypernetwork: K steps in which an MLP per
  layer maps the layer's (normalized) gradient to its update; its hidden width is proportional to
  the layer's parameter count, so its parameters grow as width^4.
- `LearnedInitKSteps`: MAML-style: a learned initialization and K inner gradient steps with
  learned per-layer step sizes (0 steps: one INR for every signal, the mean-signal baseline).
- `PerSignalFit`: nothing learned across signals: each signal's INR is fitted from a random
  initialization by `fit_steps` Adam steps on its own pixels.
"""

from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from components.inr.target import TargetINR, Weights, fourier_features, signal_mse
from components.types import NonNegativeInt, PositiveFloat, PositiveInt


@contextlib.contextmanager
def _grad_enabled():
    """Autograd on, inference mode off: inner gradient steps work under Lightning's test loop."""
    with torch.inference_mode(False), torch.enable_grad():
        yield


def _linear_init(shapes: list[tuple[int, int]]) -> nn.ParameterList:
    """Learned (W, b) per layer, flattened W0, b0, W1, ..., with nn.Linear's default initialization."""
    params = []
    for out, fan_in in shapes:
        bound = 1.0 / math.sqrt(fan_in)
        params.append(nn.Parameter(torch.empty(out, fan_in).uniform_(-bound, bound)))
        params.append(nn.Parameter(torch.empty(out).uniform_(-bound, bound)))
    return nn.ParameterList(params)


def _pairs(flat: list[torch.Tensor]) -> Weights:
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]


class _INRGenerator(nn.Module):
    """The target INR every model generates (arguments of `TargetINR`) and the split of x."""

    def __init__(self, coord_dims: int, out_channels: int, width: int, depth: int, frequencies: int) -> None:
        super().__init__()
        self.target = TargetINR(coord_dims, out_channels, width, depth, frequencies)

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        expected = self.target.coord_dims + self.target.out_channels
        if x.ndim != 3 or x.shape[-1] != expected:
            raise ValueError(f"expected points of shape (B, P, {expected}) (coordinates then values), "
                             f"got {tuple(x.shape)}")
        return x[..., : self.target.coord_dims].clone(), x[..., self.target.coord_dims:].clone()

    def expanded(self, params: nn.ParameterList, batch: int) -> list[torch.Tensor]:
        """The shared learned weights as one copy per signal (a view; gradients come per signal)."""
        return [p.expand(batch, *p.shape) for p in params]


def _inner_gradients(target: TargetINR, flat: list[torch.Tensor], coords: torch.Tensor, values: torch.Tensor,
                     create_graph: bool) -> tuple[torch.Tensor, ...]:
    """Gradient of each signal's own reconstruction MSE with respect to its weights."""
    loss = signal_mse(target(_pairs(flat), coords), values).sum()
    return torch.autograd.grad(loss, flat, create_graph=create_graph)


class LearnedInitKSteps(_INRGenerator):
    """MAML-style baseline: weights = learned init, then `inner_steps` gradient steps on the
    signal's own pixels, theta <- theta - lr_l * grad (lr_l learned per layer, from `inner_lr`).
    Trained through the inner steps (second order). With inner_steps 0 it is one INR shared by
    every signal: the mean-signal baseline.

    Args:
        coord_dims, out_channels, width, depth, frequencies: The target INR (`TargetINR`).
        inner_steps: Gradient steps per signal.
        inner_lr: Initial step size of every layer.
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4, inner_steps: NonNegativeInt = 3,
                 inner_lr: PositiveFloat = 1.0) -> None:
        super().__init__(coord_dims, out_channels, width, depth, frequencies)
        self.init = _linear_init(self.target.shapes)
        self.inner_steps = inner_steps
        self.log_lr = nn.Parameter(torch.full((len(self.init),), math.log(inner_lr)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _grad_enabled():
            coords, values = self.split(x)
            flat = self.expanded(self.init, len(x))
            for _ in range(self.inner_steps):
                grads = _inner_gradients(self.target, flat, coords, values, create_graph=self.training)
                flat = [p - lr.exp() * g for p, g, lr in zip(flat, grads, self.log_lr)]
            return self.target(_pairs(flat), coords)


class MLPRolloutHypernet(_INRGenerator):
    """Optimization-oriented MLP hypernetwork: from a learned init, `steps` updates
    theta_l <- theta_l - MLP_l(g_l / rms(g_l)), g_l the gradient of the signal's reconstruction MSE
    for layer l (second order in training). MLP_l: n_l -> hidden_ratio * n_l -> n_l, n_l the
    layer's parameter count, shared by the steps: about 2 * hidden_ratio * n_l^2 parameters, i.e.
    growing as width^4.

    Args:
        coord_dims, out_channels, width, depth, frequencies: The target INR (`TargetINR`).
        steps: Rollout steps.
        hidden_ratio: Hidden units of each MLP per parameter of its layer.
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4, steps: PositiveInt = 2,
                 hidden_ratio: PositiveFloat = 1.0) -> None:
        super().__init__(coord_dims, out_channels, width, depth, frequencies)
        self.init = _linear_init(self.target.shapes)
        self.steps = steps
        sizes = [out * fan_in + out for out, fan_in in self.target.shapes]
        self.bodies = nn.ModuleList(
            nn.Sequential(nn.Linear(n, max(1, round(hidden_ratio * n))), nn.ReLU(), nn.Linear(max(1, round(hidden_ratio * n)), n))
            for n in sizes
        )
        for body in self.bodies:  # small first updates: the rollout starts near the learned init
            with torch.no_grad():
                body[-1].weight.mul_(0.1)
                body[-1].bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _grad_enabled():
            coords, values = self.split(x)
            batch = len(x)
            flat = self.expanded(self.init, batch)
            for _ in range(self.steps):
                grads = _inner_gradients(self.target, flat, coords, values, create_graph=self.training)
                new = []
                for layer, body in enumerate(self.bodies):
                    w, b = flat[2 * layer], flat[2 * layer + 1]
                    g = torch.cat([grads[2 * layer].flatten(1), grads[2 * layer + 1]], dim=1)
                    # eps inside the root: sqrt's derivative at 0 (a layer with no gradient) is inf
                    g = g / (g.pow(2).mean(1, keepdim=True) + 1e-12).sqrt()
                    update = body(g)
                    new += [w - update[:, : w[0].numel()].view_as(w), b - update[:, w[0].numel():]]
                flat = new
            return self.target(_pairs(flat), coords)


class CrossAttention(nn.Module):
    """One role of the rollout: queries read keys/values by multi-head attention, then a
    feed-forward layer (pre-norm, residual on the queries). Parameters: O(d_model^2)."""

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.norm_q, self.norm_kv, self.norm_ff = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))

    def forward(self, queries: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        context = self.norm_kv(context)
        h = queries + self.attention(self.norm_q(queries), context, context, need_weights=False)[0]
        return h + self.ff(self.norm_ff(h))


class AttnRolloutHypernet(_INRGenerator):
    """Attention-rollout hypernetwork (the paper's method, rebuilt from its abstract).

    Tokens: one per output neuron of each layer (and one per input feature), started from a fixed
    random code per neuron (a buffer drawn with seed 0; not trained) plus a learned embedding of its
    level. Weights are read from tokens: W_l[j, i] = g_l <row(t_l,j), col(t_l-1,i)> / sqrt(d n_l-1)
    with row and col layer-normalized (so W_l starts with the scale of nn.Linear's init), a learned
    gain g_l per layer (starting at 1), and b_l[j] = bias(t_l,j) (starting at 0). Each rollout step evaluates the current INR on the signal, embeds
    each pixel (features, value, residual) and applies five cross-attention modules whose roles
    are fixed by what their output stands for:
      1. activation: every neuron token reads the pixels (the forward activations);
      2. error: output-neuron tokens read the residual pixels (the output error);
      3. delta: layer l reads layer l+1's deltas, from the output down (back-propagation);
      4. gradient: layer l's deltas read layer l-1's activations (dW = delta a^T);
      5. update: layer l's tokens read their gradient tokens (the step).
    The modules are shared by all layers and steps, so no parameter depends on the width.

    Args:
        coord_dims, out_channels, width, depth, frequencies: The target INR (`TargetINR`).
        d_model: Token width.
        heads: Attention heads.
        steps: Rollout steps K.
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4, d_model: PositiveInt = 64,
                 heads: PositiveInt = 4, steps: PositiveInt = 2) -> None:
        super().__init__(coord_dims, out_channels, width, depth, frequencies)
        if d_model % heads:
            raise ValueError(f"d_model must be divisible by heads, got d_model {d_model} and heads {heads}")
        self.steps, self.d_model = steps, d_model
        levels = self.target.neurons()
        generator = torch.Generator().manual_seed(0)
        for level, n in enumerate(levels):
            self.register_buffer(f"code_{level}", torch.randn(n, d_model, generator=generator), persistent=False)
        self.level_embed = nn.Parameter(torch.randn(len(levels), d_model) * 0.02)
        self.code_proj = nn.Linear(d_model, d_model)
        features, c = self.target.in_features, out_channels
        self.pixel_embed = nn.Sequential(nn.Linear(features + 2 * c, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.error_embed = nn.Sequential(nn.Linear(features + c, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.activation, self.error, self.delta, self.gradient, self.update = (
            CrossAttention(d_model, heads) for _ in range(5))
        self.readout_norm = nn.LayerNorm(d_model)
        self.row, self.col, self.bias = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model), nn.Linear(d_model, 1)
        nn.init.zeros_(self.bias.weight)  # biases start at 0; weights carry the signal from the start
        nn.init.zeros_(self.bias.bias)
        self.log_gain = nn.Parameter(torch.zeros(len(levels) - 1))  # one per layer: depth, not width

    def initial_tokens(self, batch: int) -> list[torch.Tensor]:
        return [(self.code_proj(getattr(self, f"code_{level}")) + self.level_embed[level]).expand(batch, -1, -1)
                for level in range(len(self.target.neurons()))]

    def emit(self, tokens: list[torch.Tensor]) -> Weights:
        """The INR's weights read from the tokens of consecutive levels."""
        normed = [self.readout_norm(t) for t in tokens]
        weights = []
        for level in range(1, len(tokens)):
            rows = F.layer_norm(self.row(normed[level]), (self.d_model,))
            cols = F.layer_norm(self.col(normed[level - 1]), (self.d_model,))
            scale = self.log_gain[level - 1].exp() / math.sqrt(self.d_model * cols.shape[1])
            weights.append((rows @ cols.transpose(1, 2) * scale, self.bias(normed[level]).squeeze(-1)))
        return weights

    def rollout_step(self, tokens: list[torch.Tensor], coords: torch.Tensor, values: torch.Tensor) -> list[torch.Tensor]:
        residual = values - self.target(self.emit(tokens), coords)
        features = fourier_features(coords, self.target.frequencies)
        pixels = self.pixel_embed(torch.cat([features, values, residual], dim=-1))
        errors = self.error_embed(torch.cat([features, residual], dim=-1))
        sizes = [t.shape[1] for t in tokens]
        active = list(self.activation(torch.cat(tokens, dim=1), pixels).split(sizes, dim=1))
        top = len(tokens) - 1
        deltas = {top: self.error(active[top], errors)}
        for level in range(top - 1, 0, -1):
            deltas[level] = self.delta(active[level], deltas[level + 1])
        return [tokens[0]] + [self.update(tokens[level], self.gradient(deltas[level], active[level - 1]))
                              for level in range(1, top + 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        coords, values = self.split(x)
        tokens = self.initial_tokens(len(x))
        for _ in range(self.steps):
            tokens = self.rollout_step(tokens, coords, values)
        return self.target(self.emit(tokens), coords)


class TransINRHypernet(_INRGenerator):
    """Trans-INR-style hypernetwork (Chen & Wang 2022): a transformer encoder over the signal's
    pixel tokens and one learned token per output neuron of each layer; a linear head per layer
    turns its neuron tokens into rows (W_l[j], b_l[j]) added to learned base weights (Trans-INR
    multiplies and renormalizes instead). Tokens, heads and base weights all grow with the width.

    Args:
        coord_dims, out_channels, width, depth, frequencies: The target INR (`TargetINR`).
        d_model: Token width.
        heads: Attention heads.
        layers: Transformer encoder layers.
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4, d_model: PositiveInt = 64,
                 heads: PositiveInt = 4, layers: PositiveInt = 2) -> None:
        super().__init__(coord_dims, out_channels, width, depth, frequencies)
        if d_model % heads:
            raise ValueError(f"d_model must be divisible by heads, got d_model {d_model} and heads {heads}")
        self.base = _linear_init(self.target.shapes)
        self.sizes = [out for out, _ in self.target.shapes]
        self.weight_tokens = nn.Parameter(torch.randn(sum(self.sizes), d_model) * 0.02)
        self.pixel_embed = nn.Linear(self.target.in_features + out_channels, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 2 * d_model, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.heads = nn.ModuleList(nn.Linear(d_model, fan_in + 1) for _, fan_in in self.target.shapes)
        for head in self.heads:  # start at the base weights
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        coords, values = self.split(x)
        pixels = self.pixel_embed(torch.cat([fourier_features(coords, self.target.frequencies), values], dim=-1))
        tokens = torch.cat([pixels, self.weight_tokens.expand(len(x), -1, -1)], dim=1)
        out = self.norm(self.encoder(tokens)[:, pixels.shape[1]:])
        weights = []
        for layer, (head, chunk) in enumerate(zip(self.heads, out.split(self.sizes, dim=1))):
            rows = head(chunk)
            weights.append((self.base[2 * layer] + rows[..., :-1], self.base[2 * layer + 1] + rows[..., -1]))
        return self.target(weights, coords)


class PerSignalFit(_INRGenerator):
    """Per-signal fitting, the test-time optimization a hypernetwork replaces: each signal's INR
    starts from nn.Linear's random initialization (the run's seed) and takes `fit_steps` Adam
    steps (lr `fit_lr`) on its own reconstruction MSE. Nothing is shared between signals and
    nothing is trained: use it in a test-only spec (`phases: [test]`).

    Args:
        coord_dims, out_channels, width, depth, frequencies: The target INR (`TargetINR`).
        fit_steps: Adam steps per signal (0: the random initialization).
        fit_lr: Adam's learning rate.
    """

    def __init__(self, coord_dims: PositiveInt = 2, out_channels: PositiveInt = 1, width: PositiveInt = 32,
                 depth: PositiveInt = 2, frequencies: NonNegativeInt = 4, fit_steps: NonNegativeInt = 100,
                 fit_lr: PositiveFloat = 1.0e-2) -> None:
        super().__init__(coord_dims, out_channels, width, depth, frequencies)
        self.fit_steps, self.fit_lr = fit_steps, fit_lr

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with _grad_enabled():
            coords, values = self.split(x)
            flat = [t.to(x.device).requires_grad_() for pair in self.target.init_weights(len(x)) for t in pair]
            optimizer = torch.optim.Adam(flat, lr=self.fit_lr)
            for _ in range(self.fit_steps):
                optimizer.zero_grad()
                # summed over signals: each signal's weights get the gradient of its own MSE only
                signal_mse(self.target(_pairs(flat), coords), values).sum().backward()
                optimizer.step()
            return self.target(_pairs([t.detach() for t in flat]), coords)
