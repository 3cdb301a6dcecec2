"""A frozen model's activations as training data, from a finite replay buffer.

`activation_buffer` turns a token data module (`source`) into batches {"x": (B, d)} of activation
vectors of a frozen model, for training a sparse autoencoder (SAE) on them:

- train: a buffer of `buffer_size` (U) unique vectors, collected once from the source's train
  split, replayed until `total_samples` (T) vectors have been served: T / U passes, each in a fresh
  random order (`ReplaySampler`). The buffer holds the activations of whole sequences of a fixed
  seeded order (the realistic storage model: store the activations of the first tokens you run),
  so a smaller buffer is a prefix of a larger one. `buffer_size: null` streams fresh activations
  instead (every vector used once; the paper's fresh-data baseline, with no buffer at all).
- val / test: `eval_samples` fresh vectors from the source's val / test split (never in a buffer).
- `normalize`: scale every vector by one constant so that the buffer's mean squared norm is d
  (as in the SAE literature), which makes learning rates transfer across models and layers.

The activations come from the task: the task fit with this data module calls
`attach(extract)` (in its `setup`), where extract(batch) -> (N, d) runs the frozen model on a
token batch {"x": (B, L)} and returns the vectors at its chosen site (`sae_training` does).

Paper: `sae_replay` (specs/sae_replay/README.md): quality depends on the number of unique
activations U, not on whether every one of the T training vectors is fresh.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Callable, Literal

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset, Sampler

from components.data.base import TensorDictDataset, keep_batch
from components.kinds import Kind
from components.local_assets import DTYPES
from components.types import PositiveInt

Data = Annotated[Any, Kind("data")]


class ReplaySampler(Sampler[int]):
    """`total` indices into a buffer of `size` rows: whole random permutations of the buffer one
    after another (every row once per pass), the last pass cut short. The order is drawn from
    (seed, epoch) alone, like `EpochShuffle`."""

    def __init__(self, size: int, total: int, seed: int) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if total < 1:
            raise ValueError(f"total must be >= 1, got {total}")
        self.size, self.total, self.seed, self.epoch = size, total, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed((self.seed * 100_003 + self.epoch) % 2**63)
        remaining = self.total
        while remaining > 0:
            order = torch.randperm(self.size, generator=generator)[:remaining]
            remaining -= len(order)
            yield from order.tolist()

    def __len__(self) -> int:
        return self.total


class _FreshStream(IterableDataset):
    """`total` fresh vectors in batches: sequences in `order`, collected a chunk at a time and
    shuffled within the chunk."""

    def __init__(self, collect: Callable[[torch.Tensor], torch.Tensor], sequences: torch.Tensor,
                 total: int, batch_size: int, chunk: int, seed: int) -> None:
        self.collect, self.sequences, self.total = collect, sequences, total
        self.batch_size, self.chunk, self.seed = batch_size, chunk, seed

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed % 2**63)
        served, pending = 0, []
        for start in range(0, len(self.sequences), self.chunk):
            vectors = self.collect(self.sequences[start : start + self.chunk])
            vectors = torch.cat([*pending, vectors[torch.randperm(len(vectors), generator=generator)]])
            while len(vectors) >= self.batch_size or (len(vectors) and served + len(vectors) >= self.total):
                take = min(self.batch_size, self.total - served)
                yield {"x": vectors[:take]}
                vectors, served = vectors[take:], served + take
                if served >= self.total:
                    return
            pending = [vectors]
        raise ValueError(
            f"fresh streaming needs total_samples = {self.total} unique vectors but the train split "
            f"yields only {served + sum(len(p) for p in pending)}"
        )

    def __len__(self) -> int:
        return math.ceil(self.total / self.batch_size)


class ActivationBuffer(L.LightningDataModule):
    """Activation vectors of a frozen model: a replay buffer of U unique vectors for training,
    fresh vectors for val and test.

    Args:
        source: Token data module (`char_text`, `token_file`) with `split(name)` -> {"x": (N, L)}.
        total_samples: T, the training budget in vectors (one Lightning epoch serves T vectors).
        buffer_size: U, unique training vectors kept and replayed (1 <= U <= T); null streams
            T fresh vectors with no buffer.
        batch_size: Vectors per training and evaluation batch.
        eval_samples: Fresh vectors in each of val and test.
        selection_seed: Seed of the order in which train sequences enter the buffer (fixed across
            a sweep over U, so smaller buffers are prefixes of larger ones).
        normalize: Scale all vectors so the training vectors' mean squared norm is d.
        collect_batch_size: Sequences per forward pass of the frozen model while collecting.
        buffer_dtype: Storage type of the buffer (bfloat16 halves the memory at paper scale).
    """

    def __init__(
        self,
        source: Data,
        total_samples: PositiveInt,
        buffer_size: PositiveInt | None = None,
        batch_size: PositiveInt = 1024,
        eval_samples: PositiveInt = 16384,
        selection_seed: int = 0,
        normalize: bool = True,
        collect_batch_size: PositiveInt = 64,
        buffer_dtype: Literal["float32", "bfloat16"] = "float32",
    ) -> None:
        super().__init__()
        if buffer_size is not None and buffer_size > total_samples:
            raise ValueError(f"buffer_size must be in [1, total_samples = {total_samples}] or null, got {buffer_size}")
        if buffer_dtype not in DTYPES:
            raise ValueError(f"buffer_dtype must be one of {sorted(DTYPES)}, got '{buffer_dtype}'")
        if not hasattr(source, "split"):
            raise ValueError(f"source must be a token data module with split(name), got {type(source).__name__}")
        self.source, self.total_samples, self.buffer_size = source, total_samples, buffer_size
        self.batch_size, self.eval_samples, self.selection_seed = batch_size, eval_samples, selection_seed
        self.normalize, self.collect_batch_size, self.dtype = normalize, collect_batch_size, DTYPES[buffer_dtype]
        self.extract: Callable[[dict[str, torch.Tensor]], torch.Tensor] | None = None
        self.buffer: torch.Tensor | None = None
        self.scale: float | None = None

    def attach(self, extract: Callable[[dict[str, torch.Tensor]], torch.Tensor]) -> None:
        """Set the activation extractor: extract({"x": token ids (B, L)}) -> vectors (N, d)."""
        if self.extract is not extract:
            self.buffer, self.scale = None, None
        self.extract = extract

    def setup(self, stage: str | None = None) -> None:
        self.source.setup(stage)

    # -- collection ---------------------------------------------------------------------------

    def _collect(self, sequences: torch.Tensor, count: int | None = None, split: str = "train") -> torch.Tensor:
        """Vectors of `sequences` in order, a forward pass per `collect_batch_size` sequences; with
        `count`, stop once that many are collected (and fail if the sequences hold fewer)."""
        if self.extract is None:
            raise RuntimeError(
                "activation_buffer has no activation extractor: fit it with a task that calls "
                "datamodule.attach(extract) in its setup (task 'sae_training')"
            )
        out, have = [], 0
        for start in range(0, len(sequences), self.collect_batch_size):
            vectors = self.extract({"x": sequences[start : start + self.collect_batch_size]})
            out.append(vectors.detach().to("cpu", self.dtype))
            have += len(vectors)
            if count is not None and have >= count:
                return torch.cat(out)[:count]
        if count is not None:
            raise ValueError(
                f"the {split} split yields {have} activation vectors, fewer than the {count} unique vectors "
                f"asked for; use more text or fewer samples"
            )
        return torch.cat(out)

    def _train_order(self) -> torch.Tensor:
        sequences = self.source.split("train")["x"]
        generator = torch.Generator().manual_seed(self.selection_seed)
        return sequences[torch.randperm(len(sequences), generator=generator)]

    def _vectors(self, sequences: torch.Tensor, count: int, split: str) -> torch.Tensor:
        return self._collect(sequences, count, split)

    def _scaled(self, vectors: torch.Tensor) -> torch.Tensor:
        return vectors * self._scale() if self.normalize else vectors

    def _scale(self) -> float:
        if self.scale is None:
            reference = self.train_buffer() if self.buffer_size is not None else \
                self._vectors(self._train_order(), min(self.total_samples, self.eval_samples), "train")
            self.scale = math.sqrt(reference.shape[1] / reference.float().pow(2).sum(1).mean().item())
        return self.scale

    def train_buffer(self) -> torch.Tensor:
        """The U unique training vectors (unnormalized), collected on first use."""
        if self.buffer_size is None:
            raise ValueError("buffer_size is null (fresh streaming): there is no buffer")
        if self.buffer is None:
            self.buffer = self._vectors(self._train_order(), self.buffer_size, "train")
        return self.buffer

    # -- loaders ------------------------------------------------------------------------------

    def train_dataloader(self) -> DataLoader:
        seed = torch.initial_seed()  # the run's seed (seed_everything) fixes the replay order
        if self.buffer_size is None:
            scale = self._scale() if self.normalize else 1.0
            stream = _FreshStream(lambda s: self._collect(s).float() * scale, self._train_order(), self.total_samples,
                                  self.batch_size, self.collect_batch_size, seed)
            return DataLoader(stream, batch_size=None)
        buffer = self._scaled(self.train_buffer().float()).to(self.dtype)
        return DataLoader(TensorDictDataset({"x": buffer}), batch_size=self.batch_size,
                          sampler=ReplaySampler(len(buffer), self.total_samples, seed), collate_fn=keep_batch)

    def _eval_loader(self, split: str) -> DataLoader:
        vectors = self._scaled(self._vectors(self.source.split(split)["x"], self.eval_samples, split).float())
        return DataLoader(TensorDictDataset({"x": vectors}), batch_size=self.batch_size, collate_fn=keep_batch)

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader("test")
