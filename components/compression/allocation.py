"""Mixed-precision post-training weight quantization: greedy global bit allocation over
hardware-aligned tiles under an average-bits budget, with a static or a dynamic sensitivity.

Seed paper: ScaleBITS (scalebits, NeurIPS 2026; specs/scalebits/README.md). The claim: the loss
change of lowering a weight's precision depends on the current quantized model, not on the
full-precision one; a greedy allocation that re-measures it as quantization progresses (dynamic)
beats uniform precision and beats an allocation from full-precision sensitivities (static) at the
same average bits.

The analysis `mixed_precision_ptq` (a `posthoc_analysis`): every nn.Linear weight of the trained
model (except those named in `keep_full_precision`) is cut into tiles (components/compression/
blocks.py), after a channel reordering by full-precision sensitivity F * w^2 when `reorder`. Every
method then sees the same tiles and quantization groups; they differ only in the bits per tile:

- `uniform`: every tile at `avg_bits` (one of `bits`);
- `static`, `dynamic`, `random`: progressive quantization. All tiles start at max(bits); while the
  average is above `avg_bits`, lower by one step (to the next smaller width in `bits`) the
  `moves_per_estimate` tiles of least estimated loss increase per saved bit, then estimate again
  (moves_per_estimate = 1 is exact greedy; more moves per estimate is the paper's efficient
  approximation). The estimate is components/compression/sensitivity.py's Taylor estimate of
  lowering one tile alone: `static` at the full-precision weights, measured once (cost of
  q_{b-1} vs q_b as 1/2 F0 ((q_{b-1} - w)^2 - (q_b - w)^2) + g0 . (q_{b-1} - q_b));
  `dynamic` at the current quantized model, re-measured before every round (g . d + 1/2 F d^2,
  d = q_{b-1} - q_b); `random` draws the costs at random (a control: mixed bits without a
  sensitivity);
- `full_precision`: no quantization (the reference).

All methods use the same calibration windows (`calibration_size` samples of the train split,
drawn with `seed`). Results (logged as test/<name>): `loss` (mean test cross-entropy, nats per
target), `perplexity`, `fp_loss` (the full-precision model's), `excess_loss` (loss - fp_loss),
`prior_loss` (the train split's label frequencies as the prediction: unigram statistics for an
LM, the class prior for a classifier), `avg_bits` (achieved), `share_<b>bit` (fraction of
quantized weights at b bits), `estimates` (sensitivity measurements), `calibration_loss` and
`top_quarter_share` (share of the total full-precision sensitivity held by the 25% most
sensitive tiles: how much the reordering concentrates it). Scales and zero points are the same
for every method (one per row of a tile), so they are not counted in `avg_bits`.
"""

from __future__ import annotations

import copy
import math
from typing import Annotated, Literal

import torch
from annotated_types import Ge, MaxLen, MinLen
from torch import nn

from components.compression.blocks import BlockLayout, block_layout
from components.compression.sensitivity import gradient_and_fisher, mean_loss
from components.types import NonNegativeInt, PositiveFloat, PositiveInt

Method = Literal["dynamic", "static", "uniform", "random", "full_precision"]
METHODS = ("dynamic", "static", "uniform", "random", "full_precision")


def quantized_linears(model: nn.Module, keep: list[str]) -> list[tuple[str, nn.Linear]]:
    """The model's nn.Linear modules, in named_modules() order, but those named in `keep`."""
    found = [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    names = {name for name, _ in found}
    unknown = sorted(set(keep) - names)
    if unknown:
        raise ValueError(f"keep_full_precision names {unknown}, not Linear modules of the model ({sorted(names)})")
    chosen = [(name, m) for name, m in found if name not in keep]
    if not chosen:
        raise ValueError(f"{type(model).__name__} has no nn.Linear layer to quantize")
    return chosen


def prior_loss(y_train: torch.Tensor, y_test: torch.Tensor, classes: int) -> float:
    """Cross-entropy on y_test of the train labels' frequencies (add-one smoothed)."""
    counts = torch.bincount(y_train.reshape(-1), minlength=classes).double() + 1.0
    logp = torch.log(counts / counts.sum())
    return float(-logp[y_test.reshape(-1)].mean())


class MixedPrecisionPTQ:
    """Quantize a trained model's Linear weights with one bit width per tile (module docstring) and
    measure it on the test split.

    Args:
        method: dynamic, static, uniform, random or full_precision (module docstring).
        avg_bits: Budget: the average bits per quantized weight (<= max(bits), >= min(bits)).
        bits: The widths a tile may take (each >= 1; >= 2 when symmetric).
        block: Tile shape (output channels, input channels); each side divides every quantized
            weight's matching dimension. The tile's rows are also the quantization groups.
        reorder: Reorder input and output channels by full-precision sensitivity before tiling.
        moves_per_estimate: Tiles lowered between two sensitivity estimates (1: exact greedy).
        calibration_size: Train samples the sensitivities are measured on.
        micro_batch: Samples per micro-batch of the Fisher estimate.
        symmetric: Symmetric levels (else min-max with a zero point, the default of low-bit LLM
            weight quantization).
        keep_full_precision: Names of Linear modules left unquantized.
        seed: Draws the calibration samples (and the random method's costs).
        eval_batch_size: Samples per forward pass when measuring losses.
    """

    splits = ("train", "test")

    def __init__(
        self,
        method: Method = "dynamic",
        avg_bits: PositiveFloat = 3.0,
        bits: Annotated[list[Annotated[int, Ge(1)]], MinLen(1)] = [2, 3, 4],  # noqa: B006 (JSON-typed default, never mutated)
        block: Annotated[list[PositiveInt], MinLen(2), MaxLen(2)] = [16, 16],  # noqa: B006 (JSON-typed default, never mutated)
        reorder: bool = True,
        moves_per_estimate: PositiveInt = 8,
        calibration_size: PositiveInt = 64,
        micro_batch: PositiveInt = 1,
        symmetric: bool = False,
        keep_full_precision: list[str] = [],  # noqa: B006 (JSON-typed default, never mutated)
        seed: NonNegativeInt = 0,
        eval_batch_size: PositiveInt = 256,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got '{method}'")
        widths = sorted(set(int(b) for b in bits))
        if min(widths) < (2 if symmetric else 1):
            raise ValueError(f"bits must be >= {2 if symmetric else 1} (symmetric={symmetric}), got {list(bits)}")
        if method != "full_precision" and not widths[0] <= avg_bits <= widths[-1]:
            raise ValueError(f"avg_bits {avg_bits} is outside the widths' range [{widths[0]}, {widths[-1]}]")
        if method == "uniform" and avg_bits not in widths:
            raise ValueError(f"method uniform needs avg_bits to be one of bits {widths}, got {avg_bits}")
        self.method, self.avg_bits, self.widths = method, float(avg_bits), widths
        self.block = (int(block[0]), int(block[1]))
        self.reorder, self.moves_per_estimate = reorder, moves_per_estimate
        self.calibration_size, self.micro_batch, self.symmetric = calibration_size, micro_batch, symmetric
        self.keep, self.seed, self.eval_batch_size = list(keep_full_precision), seed, eval_batch_size

    # -- the pieces -----------------------------------------------------------------------------

    def _lower(self, bits: torch.Tensor) -> torch.Tensor:
        """Each tile's next smaller width (the same where it is at the smallest)."""
        table = torch.tensor(self.widths)
        index = torch.searchsorted(table, bits)
        return table[torch.clamp(index - 1, min=0)]

    def _quantize(self, layouts: list[BlockLayout], fp: list[torch.Tensor], state: list[torch.Tensor]) -> list[torch.Tensor]:
        return [lay.quantize(w, b, self.symmetric) for lay, w, b in zip(layouts, fp, state)]

    def _costs(self, model, weights, layouts, fp, state, x, y, static) -> list[torch.Tensor]:
        """Estimated loss increase per saved bit of lowering each tile by one step; inf where a
        tile cannot be lowered."""
        current = self._quantize(layouts, fp, state)
        lower_bits = [self._lower(b) for b in state]
        lowered = self._quantize(layouts, fp, lower_bits)
        if self.method == "dynamic":
            with torch.no_grad():
                for p, q in zip(weights, current):
                    p.copy_(q)
            grads, fisher, _ = gradient_and_fisher(model, weights, x, y, self.micro_batch)
        costs = []
        gen = torch.Generator().manual_seed(self.seed * 7919 + int(sum(int(b.sum()) for b in state)))
        for i, lay in enumerate(layouts):
            if self.method == "dynamic":
                d = lowered[i] - current[i]
                per_weight = grads[i] * d + 0.5 * fisher[i] * d.square()
                cost = lay.tile_sums(per_weight)
            elif self.method == "static":
                g0, f0, w = static
                per_weight = g0[i] * (lowered[i] - current[i]) + 0.5 * f0[i] * (
                    (lowered[i] - fp[i]).square() - (current[i] - fp[i]).square())
                cost = lay.tile_sums(per_weight)
            else:  # random
                cost = torch.rand(lay.grid, generator=gen, dtype=torch.float64)
            saved = (state[i] - lower_bits[i]).double() * lay.tile_size
            cost = cost.detach().double().cpu() / saved.clamp(min=1)
            costs.append(torch.where(saved > 0, cost, torch.full_like(cost, math.inf)))
        return costs

    def _allocate(self, model, weights, layouts, fp, x, y, static) -> tuple[list[torch.Tensor], int]:
        """Greedy progressive lowering from max(bits) to the budget (module docstring)."""
        state = [torch.full(lay.grid, self.widths[-1], dtype=torch.long) for lay in layouts]
        sizes = [lay.tile_size for lay in layouts]
        total = sum(int(b.numel()) * s for b, s in zip(state, sizes))
        budget = self.avg_bits * total
        spent = sum(int(b.sum()) * s for b, s in zip(state, sizes))
        estimates = 0
        while spent > budget + 1e-9:
            costs = self._costs(model, weights, layouts, fp, state, x, y, static)
            estimates += 1
            flat = torch.cat([c.reshape(-1) for c in costs])
            owner = torch.cat([torch.full((c.numel(),), i) for i, c in enumerate(costs)])
            local = torch.cat([torch.arange(c.numel()) for c in costs])
            order = torch.sort(flat, stable=True).indices
            moves = 0
            for k in order.tolist():
                if moves == self.moves_per_estimate or spent <= budget + 1e-9 or math.isinf(flat[k]):
                    break
                i, j = int(owner[k]), int(local[k])
                row, col = divmod(j, state[i].shape[1])
                old = int(state[i][row, col])
                new = int(self._lower(state[i][row, col].reshape(1))[0])
                state[i][row, col] = new
                spent -= (old - new) * sizes[i]
                moves += 1
            if moves == 0:
                raise RuntimeError(f"avg_bits {self.avg_bits} cannot be reached with bits {self.widths}")
        return state, estimates

    # -- the analysis ---------------------------------------------------------------------------

    def __call__(self, model: nn.Module, splits: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
        train, test = splits["train"], splits["test"]
        work = copy.deepcopy(model).eval()
        for p in work.parameters():
            p.requires_grad_(False)
        linears = quantized_linears(work, self.keep)
        weights = [m.weight for _, m in linears]
        for p in weights:
            p.requires_grad_(True)
        fp = [p.detach().clone() for p in weights]
        gen = torch.Generator().manual_seed(self.seed)
        n = min(self.calibration_size, len(train["x"]))
        pick = torch.randperm(len(train["x"]), generator=gen)[:n]
        x, y = train["x"][pick], train["y"][pick]

        with torch.no_grad():
            logits = work(test["x"][:1].to(weights[0].device))
        results = {
            "fp_loss": mean_loss(work, test["x"], test["y"], self.eval_batch_size),
            "prior_loss": prior_loss(train["y"], test["y"], logits.shape[-1]),
        }
        g0, f0, _ = gradient_and_fisher(work, weights, x, y, self.micro_batch)
        saliency = [f * w.square() for f, w in zip(f0, fp)]
        layouts = [block_layout(tuple(w.shape), self.block, s if self.reorder else None) for w, s in zip(fp, saliency)]
        tiles = torch.cat([lay.tile_sums(s).reshape(-1).double().cpu() for lay, s in zip(layouts, saliency)])
        top = torch.sort(tiles, descending=True).values[: max(1, len(tiles) // 4)]
        results["top_quarter_share"] = float(top.sum() / tiles.sum())

        estimates = 0
        if self.method == "full_precision":
            state = None
        elif self.method == "uniform":
            state = [torch.full(lay.grid, int(self.avg_bits), dtype=torch.long) for lay in layouts]
        else:
            state, estimates = self._allocate(work, weights, layouts, fp, x, y, (g0, f0, fp))
        with torch.no_grad():
            final = fp if state is None else self._quantize(layouts, fp, state)
            for p, q in zip(weights, final):
                p.copy_(q)
        results["loss"] = mean_loss(work, test["x"], test["y"], self.eval_batch_size)
        results["perplexity"] = math.exp(results["loss"])
        results["excess_loss"] = results["loss"] - results["fp_loss"]
        results["calibration_loss"] = mean_loss(work, x, y, self.eval_batch_size)
        results["estimates"] = float(estimates)
        sizes = [lay.tile_size for lay in layouts]
        total = sum(lay.grid[0] * lay.grid[1] * s for lay, s in zip(layouts, sizes))
        if state is None:
            results["avg_bits"] = 32.0
        else:
            results["avg_bits"] = sum(int(b.sum()) * s for b, s in zip(state, sizes)) / total
            for width in self.widths:
                results[f"share_{width}bit"] = sum(int((b == width).sum()) * s for b, s in zip(state, sizes)) / total
        return results
