"""Recurrent controllers of a plant, conditioned on a discrete code (the motor primitive to run).

`motor_rnn` is one leaky tanh RNN core,

    h <- (1 - alpha) h + alpha tanh(W_in x + (W + dW(c)) h + b),     u = W_out h,

whose code c (one of `codes`) reaches it in one of two ways (`conditioning`):
- `adapters`: a bank of residual adapters dW_1..dW_K (full hidden x hidden matrices, no rank
  constraint), dW(c) = sum_k c_k dW_k for a one-hot (or soft) code c: the motor primitives as
  perturbations of the shared recurrent weights (the paper's architecture);
- `input`: the one-hot code is concatenated to the observation (dW = 0): the task-input-conditioned
  multitask RNN, the paper's baseline.
Adapters start at zero (`adapter_init: zero`) or at Gaussian matrices of standard deviation
`adapter_init_scale / sqrt(hidden)` (`random`, full rank: the ablation showing that a low-rank
learned change is not an artefact of starting at zero); their starting values are kept in a buffer
(`adapters_init`) so the analysis reads the learned change dW_k - dW_k(0).

Contract (used by the `plant_bptt` task): initial_state(B) -> (B, hidden); context(code (B, K)
float) -> what step needs for that code; step(obs (B, in_features), h, context) -> (u (B,
out_features), h). The output is raw: the task squashes it into the plant's action range.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from components.types import PositiveFloat, PositiveInt


class MotorRNN(nn.Module):
    """A leaky tanh RNN conditioned on a code by residual adapters or by an input (module docstring).

    Args:
        in_features: Observation width (the plant's observation_dim).
        out_features: Action width (the plant's action_dim).
        codes: Number of codes K (the primitives of the repertoire).
        hidden: Recurrent units.
        conditioning: `adapters` (a bank of K residual adapters on the recurrent weights) or
            `input` (the one-hot code as an extra input).
        alpha: Leak dt / tau of the units.
        gain: Spectral scale g of the recurrent weights' Gaussian init (std g / sqrt(hidden)).
        adapter_init: `zero` or `random` (Gaussian, std adapter_init_scale / sqrt(hidden)).
        adapter_init_scale: Scale of the random adapter init.
    """

    def __init__(self, in_features: PositiveInt, out_features: PositiveInt, codes: PositiveInt = 8,
                 hidden: PositiveInt = 64, conditioning: Literal["adapters", "input"] = "adapters",
                 alpha: PositiveFloat = 0.5, gain: PositiveFloat = 0.9,
                 adapter_init: Literal["zero", "random"] = "zero", adapter_init_scale: PositiveFloat = 0.5) -> None:
        super().__init__()
        if conditioning not in ("adapters", "input") or adapter_init not in ("zero", "random"):
            raise ValueError(f"conditioning must be adapters|input and adapter_init zero|random, got "
                             f"{conditioning!r}, {adapter_init!r}")
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.in_features, self.out_features, self.codes, self.hidden = in_features, out_features, codes, hidden
        self.conditioning, self.alpha = conditioning, alpha
        extra = codes if conditioning == "input" else 0
        self.encoder = nn.Linear(in_features + extra, hidden)
        self.recurrent = nn.Parameter(torch.randn(hidden, hidden) * (gain / math.sqrt(hidden)))
        self.readout = nn.Linear(hidden, out_features)
        nn.init.normal_(self.readout.weight, std=0.1 / math.sqrt(hidden))
        nn.init.zeros_(self.readout.bias)
        if conditioning == "adapters":
            start = (torch.zeros(codes, hidden, hidden) if adapter_init == "zero"
                     else torch.randn(codes, hidden, hidden) * (adapter_init_scale / math.sqrt(hidden)))
            self.adapters = nn.Parameter(start.clone())
            self.register_buffer("adapters_init", start)
        else:
            self.adapters = None

    def initial_state(self, batch_size: int) -> torch.Tensor:
        return torch.zeros(batch_size, self.hidden, device=self.recurrent.device)

    def context(self, code: torch.Tensor) -> torch.Tensor:
        """Per-sample recurrent matrices (B, H, H) (adapters) or the code itself (input)."""
        if self.adapters is None:
            return code
        return self.recurrent + torch.einsum("bk,kij->bij", code, self.adapters)

    def step(self, obs: torch.Tensor, h: torch.Tensor, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.adapters is None:
            drive = self.encoder(torch.cat([obs, context], dim=1)) + h @ self.recurrent.T
        else:
            drive = self.encoder(obs) + torch.bmm(context, h.unsqueeze(2)).squeeze(2)
        h = (1 - self.alpha) * h + self.alpha * torch.tanh(drive)
        return self.readout(h), h

    def adapter_changes(self) -> torch.Tensor | None:
        """The learned change of every adapter, dW_k - dW_k(0) (K, H, H), or None without adapters."""
        if self.adapters is None:
            return None
        return (self.adapters - self.adapters_init).detach()

    def forward(self, *args: Any) -> Any:  # the task drives step(); forward is step
        return self.step(*args)
