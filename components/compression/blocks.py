"""Hardware-aligned blocks of a weight matrix, optionally after a channel reordering, and
quantization with one bit width per block.

Seed paper: ScaleBITS (scalebits, NeurIPS 2026; specs/scalebits/README.md). A Linear weight
(out, in) is cut into tiles of `block = (rows, cols)` output x input channels; every tile holds
one bit width (what a mixed-precision kernel can serve without per-weight metadata). Inside a tile
each output row's `cols` entries are one quantization group with a scale of its own (group-wise
round-to-nearest, `components.models.precision.quantize_uniform`), so the tile size is also the
group size, whatever the bits.

Reordering (the paper's bi-directional channel permutation): sort the output channels by their
summed sensitivity and the input channels by theirs, both descending, and tile the permuted matrix,
so sensitive weights gather in a few tiles (which then get the bits) instead of being spread over
all. At deployment the permutation is absorbed by the neighbouring layers or an index; here it is
simulated (`BlockLayout` maps tiles back to the original coordinates) and costs nothing at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from components.models.precision import quantize_uniform


@dataclass(frozen=True)
class BlockLayout:
    """Tiles of one (out, in) weight: rows[i] is the i-th output channel of the permuted matrix,
    cols[j] its j-th input channel; tile (r, c) holds permuted rows r*block[0] .. and columns
    c*block[1] .. ."""

    rows: torch.Tensor
    cols: torch.Tensor
    block: tuple[int, int]

    @property
    def grid(self) -> tuple[int, int]:
        """Number of tiles along the output and the input channels."""
        return len(self.rows) // self.block[0], len(self.cols) // self.block[1]

    @property
    def tile_size(self) -> int:
        return self.block[0] * self.block[1]

    def permute(self, x: torch.Tensor) -> torch.Tensor:
        """x (out, in) in permuted order."""
        return x[self.rows][:, self.cols]

    def unpermute(self, xp: torch.Tensor) -> torch.Tensor:
        """Inverse of `permute`."""
        out = torch.empty_like(xp)
        out[self.rows.unsqueeze(1), self.cols.unsqueeze(0)] = xp
        return out

    def tile_sums(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of a per-weight quantity x (out, in) over each tile: (grid rows, grid cols)."""
        (r, c), (br, bc) = self.grid, self.block
        return self.permute(x).reshape(r, br, c, bc).sum(dim=(1, 3))

    def quantize(self, w: torch.Tensor, bits: torch.Tensor, symmetric: bool = False) -> torch.Tensor:
        """w (out, in) with tile (r, c) quantized to bits[r, c] bits, in w's own order."""
        if tuple(bits.shape) != self.grid:
            raise ValueError(f"bits has shape {tuple(bits.shape)}, expected the tile grid {self.grid}")
        per_group = bits.repeat_interleave(self.block[0], dim=0)  # (out, grid cols): one width per row group
        q = quantize_uniform(self.permute(w), per_group, symmetric=symmetric, group_size=self.block[1])
        return self.unpermute(q)


def block_layout(shape: tuple[int, int], block: tuple[int, int], sensitivity: torch.Tensor | None = None) -> BlockLayout:
    """The tiles of an (out, in) weight; with a per-weight `sensitivity` (out, in) the channels are
    reordered first (module docstring), ties kept in channel order; without one, no reordering.

    Raises:
        ValueError: a block side does not divide the matrix (hardware-aligned tiles cover it exactly).
    """
    out_ch, in_ch = shape
    if out_ch % block[0] or in_ch % block[1]:
        raise ValueError(f"block {tuple(block)} does not tile a weight of shape {tuple(shape)}: "
                         f"each side must divide the matching dimension")
    if sensitivity is None:
        return BlockLayout(torch.arange(out_ch), torch.arange(in_ch), tuple(block))
    if tuple(sensitivity.shape) != tuple(shape):
        raise ValueError(f"sensitivity has shape {tuple(sensitivity.shape)}, expected {tuple(shape)}")
    s = sensitivity.detach().double()
    rows = torch.sort(s.sum(dim=1), descending=True, stable=True).indices
    cols = torch.sort(s.sum(dim=0), descending=True, stable=True).indices
    return BlockLayout(rows.cpu(), cols.cpu(), tuple(block))
