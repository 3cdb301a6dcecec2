"""A Mamba-2 style state-space sequence mixer in plain torch: the SSD ("state space duality") form.

Per head h, with scalar decay a_t = exp(dt_t * A_h) (A_h < 0; the simplified zero-order hold of
Mamba: the input is discretized as dt_t * B_t, not by the exact ZOH integral) and a state of fixed
size N shared by the head's P channels:

    state_t = a_t * state_{t-1} + dt_t * B_t x_t^T        (N x P)
    y_t     = C_t^T state_t + D_h * x_t

Unrolled, y = ((C B^T) o L) (dt * x) + D x with the causal decay matrix
L[t, s] = exp(sum_{r=s+1..t} dt_r A_h) for s <= t, else 0 (Dao & Gu 2024, "Transformers are SSMs").
`ssd` computes that quadratic form: O(T^2) per head, exact, and fine for the short sequences (T <=
256) of CPU specs; paper scale uses the mamba-ssm kernels' chunked scan, which computes the same
map. `ssd_recurrent` is the step-by-step recurrence above, the reference the tests hold it to.

The block (`SSDMixer`) is Mamba-2's: one input projection to [z, x, B, C, dt], a depthwise causal
convolution and SiLU over [x, B, C], the SSD with one B and C for all heads (ngroups = 1), a gate
y * silu(z), an RMS norm, and the output projection `proj`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from components.types import PositiveFloat, PositiveInt


def decay_matrix(log_a: torch.Tensor) -> torch.Tensor:
    """L[..., t, s] = exp(sum_{r=s+1..t} log_a[..., r]) for s <= t, else 0; log_a: (..., T) <= 0."""
    cumulative = torch.cumsum(log_a, dim=-1)
    exponent = cumulative.unsqueeze(-1) - cumulative.unsqueeze(-2)
    causal = torch.ones(log_a.shape[-1], log_a.shape[-1], dtype=torch.bool, device=log_a.device).tril()
    return torch.exp(exponent.masked_fill(~causal, float("-inf")))


def ssd(x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The SSD quadratic form Y = ((C B^T) o L) (dt * X), without the D skip (module docstring).

    x: (batch, T, heads, P); dt: (batch, T, heads) > 0; a: (heads,) < 0; b, c: (batch, T, N).
    Returns (batch, T, heads, P).
    """
    decay = decay_matrix((dt * a).transpose(1, 2))               # (batch, heads, T, T)
    scores = (c @ b.transpose(1, 2)).unsqueeze(1) * decay        # (batch, heads, T, T)
    inputs = (x * dt.unsqueeze(-1)).transpose(1, 2)              # (batch, heads, T, P)
    return (scores @ inputs).transpose(1, 2)


def ssd_recurrent(x: torch.Tensor, dt: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The same map as `ssd`, one step at a time: state_t = exp(dt_t a) state_{t-1} + dt_t B_t x_t^T,
    y_t = C_t^T state_t. O(T) sequential steps; the reference for tests."""
    batch, length, heads, width = x.shape
    state = x.new_zeros(batch, heads, b.shape[-1], width)
    outputs = []
    for t in range(length):
        decay = torch.exp(dt[:, t] * a)[..., None, None]                           # (batch, heads, 1, 1)
        update = (dt[:, t, :, None, None] * b[:, t, None, :, None]) * x[:, t, :, None, :]
        state = decay * state + update
        outputs.append(torch.einsum("bn,bhnp->bhp", c[:, t], state))
    return torch.stack(outputs, dim=1)


class SSDMixer(nn.Module):
    """Mamba-2 block as a causal sequence mixer (B, L, d_model) -> (B, L, d_model); module docstring.

    The state size and head width are fixed while the width grows (the practical regime the
    hybrid_mup paper studies: more heads, not bigger states, at larger d_model).

    Args:
        d_model: Width of the residual stream (supplied by the model).
        d_state: State size N per head (B and C have N channels).
        expand: Inner width d_inner = expand * d_model.
        head_dim: Channels P per head; must divide d_inner (heads = d_inner / head_dim).
        conv_width: Taps of the depthwise causal convolution over [x, B, C].
        dt_min: Smallest initial step size (dt is drawn log-uniformly in [dt_min, dt_max], as Mamba).
        dt_max: Largest initial step size.
        a_max: Initial decay rates -A are drawn uniformly in [1, a_max] (Mamba-2: 16).
    """

    def __init__(self, d_model: PositiveInt, d_state: PositiveInt = 16, expand: PositiveInt = 2,
                 head_dim: PositiveInt = 16, conv_width: PositiveInt = 4, dt_min: PositiveFloat = 1e-3,
                 dt_max: PositiveFloat = 1e-1, a_max: PositiveFloat = 16.0) -> None:
        super().__init__()
        d_inner = expand * d_model
        if d_inner % head_dim:
            raise ValueError(f"head_dim must divide expand * d_model = {d_inner}, got head_dim={head_dim}")
        if not dt_min <= dt_max:
            raise ValueError(f"dt_min must be <= dt_max, got dt_min={dt_min}, dt_max={dt_max}")
        if a_max < 1:
            raise ValueError(f"a_max must be >= 1, got {a_max}")
        self.d_inner, self.d_state, self.head_dim = d_inner, d_state, head_dim
        self.n_heads = d_inner // head_dim
        conv_channels = d_inner + 2 * d_state
        self.in_proj = nn.Linear(d_model, d_inner + conv_channels + self.n_heads, bias=False)
        self.conv = nn.Conv1d(conv_channels, conv_channels, conv_width, groups=conv_channels, padding=conv_width - 1)
        dt = torch.exp(torch.empty(self.n_heads).uniform_(math.log(dt_min), math.log(dt_max)))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))   # softplus(dt_bias) = dt
        self.a_log = nn.Parameter(torch.log(torch.empty(self.n_heads).uniform_(1.0, a_max)))
        self.skip = nn.Parameter(torch.ones(self.n_heads))                # D
        self.norm = nn.RMSNorm(d_inner)
        self.proj = nn.Linear(d_inner, d_model, bias=False)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        batch, length, _ = u.shape
        z, xbc, dt = self.in_proj(u).split([self.d_inner, self.d_inner + 2 * self.d_state, self.n_heads], dim=-1)
        xbc = F.silu(self.conv(xbc.transpose(1, 2))[..., :length].transpose(1, 2))
        x, b, c = xbc.split([self.d_inner, self.d_state, self.d_state], dim=-1)
        x = x.reshape(batch, length, self.n_heads, self.head_dim)
        dt = F.softplus(dt + self.dt_bias)
        y = ssd(x, dt, -torch.exp(self.a_log), b, c) + self.skip[:, None] * x
        y = self.norm(y.reshape(batch, length, self.d_inner) * F.silu(z))
        return self.proj(y)
