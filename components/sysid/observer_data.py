"""Recorded trajectories of a Lur'e system for observer training (lmi_observer).

Train, validation and test trajectories of the `system` (a `dynamical_systems` node, e.g.
components/sysid/systems.py:DisturbedPendulum) from random initial states, integrated by RK4 with
`substeps` steps per sampling interval; the output is sampled every dt with Gaussian noise. The
observer starts from z_hat = 0, so each trajectory begins with the initial error z(0).

Fit is a plain loop of `num_steps` steps: the training loader yields the step index only (the task
reads the trajectories from this module: `trajectories(split)`); test is one batch.
"""

from __future__ import annotations

from typing import Annotated, Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

from components.kinds import Kind
from components.sysid.systems import rk4_trajectories
from components.data.base import StepIndices
from components.types import PositiveInt

System = Annotated[Any, Kind("dynamical_systems")]


class ObserverTrajectories(L.LightningDataModule):
    """Noisy sampled outputs and true states of `system` (module docstring).

    Args:
        system: The plant (`dynamical_systems` kind).
        train, val, test: Trajectories per split (independent initial states and noise).
        dt: Sampling interval (s).
        horizon: Samples per trajectory after the initial one (duration horizon * dt).
        noise: Standard deviation of the measurement noise.
        substeps: RK4 steps per sampling interval for the true states.
        num_steps: Training steps of fit (batches of the training loader).
        seed: Seed of the initial states and the noise.
    """

    def __init__(self, system: System, train: PositiveInt = 32, val: PositiveInt = 64, test: PositiveInt = 128,
                 dt: float = 0.1, horizon: PositiveInt = 40, noise: float = 0.05, substeps: PositiveInt = 4,
                 num_steps: PositiveInt = 100, seed: int = 0) -> None:
        super().__init__()
        if dt <= 0 or noise < 0:
            raise ValueError(f"need dt > 0 and noise >= 0, got dt={dt}, noise={noise}")
        self.system, self.dt, self.horizon, self.noise, self.substeps = system, dt, horizon, noise, substeps
        self.sizes = {"train": train, "val": val, "test": test}
        self.num_steps, self.seed = num_steps, seed
        self._data: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def trajectories(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(true states (N, K + 1, n), measurements (N, K + 1, p)) of a split, float64."""
        if not self._data:
            rng = np.random.default_rng(self.seed)
            for name in ("train", "val", "test"):
                z = rk4_trajectories(self.system, self.system.sample_states(rng, self.sizes[name]), self.dt,
                                     self.horizon, self.substeps)
                y = z @ self.system.C.T
                y = y + self.noise * rng.standard_normal(y.shape)
                self._data[name] = (torch.from_numpy(z), torch.from_numpy(y))
        return self._data[split]

    def info(self) -> dict[str, int]:
        return {"state_dim": self.system.state_dim, "output_dim": self.system.output_dim}

    def train_dataloader(self) -> DataLoader:
        return DataLoader(StepIndices(self.num_steps), batch_size=None, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(StepIndices(1), batch_size=None, shuffle=False)
