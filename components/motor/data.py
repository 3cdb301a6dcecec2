"""The `reach_repertoire` data module: a repertoire of reach primitives on a differentiable plant.

Primitive k moves the hand by `distance` in direction 2 pi k / K from wherever it starts (a
relative reach, so primitives chain), within `segment_steps` plant steps, and holds. The plant
(`env:`, an `envs` node of the torch flavour, components/motor/plants.py) is the data's: the
training batches are only what to do and where to start, and the `plant_bptt` task rolls the
plant out inside the training step.

Train batch i (drawn from a generator seeded by (seed, i), so a resumed run draws the same
batches): `code` (B,) the primitive, balanced over the K primitives and shuffled; `given` (B,) the
code the controller is told (the same, or with `codes: random` an independent uniform draw: the
control in which the code carries no task); `start` (B, 2) joint angles, the plant's home posture
plus a uniform jitter of +-`start_jitter` rad per joint, at rest.

Test batch: `home` (1, 2) joint angles; the task evaluates the primitives from home and the novel
two-segment movements (components/motor/task.py).

`info()`: in_features = the plant's observation_dim + 2 (the task's segment cue), out_features = its action_dim, codes = K,
checked against the model's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from components.data.base import ResumableLoader, keep_batch
from components.kinds import Kind
from components.types import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt

Env = Annotated[Any, Kind("envs")]


class _Batches(Dataset):
    def __init__(self, owner: "ReachRepertoire") -> None:
        self.owner = owner

    def __len__(self) -> int:
        return self.owner.iterations

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.owner.batch(int(index))


class ReachRepertoire(L.LightningDataModule):
    """Reach primitives on a plant (module docstring).

    Args:
        env: The plant (`envs` kind, torch flavour: two_link_arm, motornet_arm26).
        primitives: K, the reach directions (and codes).
        distance: Reach length (m).
        segment_steps: Plant steps per primitive (the training horizon; a novel movement is two).
        batch_size: Movements per training step.
        iterations: Training steps per epoch.
        start_jitter: Half-width (rad) of the uniform jitter of the start joint angles around home.
        codes: `task` (the controller is told the primitive) or `random` (told an independent
            random code: the control).
        seed: Seeds the batches (write `${seed}`).
    """

    def __init__(self, env: Env, primitives: PositiveInt = 8, distance: PositiveFloat = 0.08,
                 segment_steps: PositiveInt = 40, batch_size: PositiveInt = 32, iterations: PositiveInt = 200,
                 start_jitter: NonNegativeFloat = 0.15, codes: Literal["task", "random"] = "task",
                 seed: NonNegativeInt = 0) -> None:
        super().__init__()
        if codes not in ("task", "random"):
            raise ValueError(f"codes must be task or random, got {codes!r}")
        for attr in ("reset", "step", "observation_dim", "action_dim", "home"):
            if not hasattr(env, attr):
                raise TypeError(f"env must be a differentiable plant (components/motor/plants.py), got "
                                f"{type(env).__name__} without {attr}")
        self.env, self.primitives, self.distance = env, primitives, distance
        self.segment_steps, self.batch_size, self.iterations = segment_steps, batch_size, iterations
        self.start_jitter, self.codes, self.seed = start_jitter, codes, seed
        angles = torch.arange(primitives, dtype=torch.float32) * (2 * torch.pi / primitives)
        self.displacements = distance * torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)

    def info(self) -> dict[str, int]:
        return {"in_features": int(self.env.observation_dim) + 2, "out_features": int(self.env.action_dim),
                "codes": self.primitives}

    def batch(self, index: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        code = torch.arange(self.batch_size) % self.primitives
        code = code[torch.randperm(self.batch_size, generator=gen)]
        given = code if self.codes == "task" else torch.randint(self.primitives, (self.batch_size,), generator=gen)
        jitter = (torch.rand(self.batch_size, 2, generator=gen) * 2 - 1) * self.start_jitter
        return {"code": code, "given": given, "start": self.env.home + jitter}

    def train_dataloader(self) -> DataLoader:
        return ResumableLoader(_Batches(self), batch_size=None, collate_fn=keep_batch)

    def test_dataloader(self) -> DataLoader:
        return DataLoader([{"home": self.env.home[None].clone()}], batch_size=None, collate_fn=keep_batch)
