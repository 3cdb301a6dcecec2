"""The `rollouts` data module: the environment as the data of an RL run.

Lightning needs a data loader; in on-policy RL the data is made by the policy inside the training
step. So the data module holds the environment (`env:`, an `envs` node) and its loaders yield only
step indices: the train loader `iterations` indices per epoch (one rollout of `env.num_envs`
episodes each: a training step collects them, computes the loss and updates), the test loader
`test_batches` indices (one evaluation rollout each, on a copy of the env seeded with
`test_seed`, so every arm of a comparison is tested on the same episodes' random draws). An env
(or a layer of it) with a `use_test_split()` method is switched to its held-out part in that copy
(pd_serving's `test_window` of a trace file).

`info()` gives the sizes the builder checks against the model: in_features (the flat observation
width, without an `action_mask` key) and num_actions (a Discrete space's n, a Box's dimensions).

Resume: the train env's random state (and the state of wrappers such as normalize_observation) is
in `state_dict()`, which Lightning stores in every checkpoint and restores after `setup`; the
train loader is a ResumableLoader (components/data/base.py), so a run resumed mid-epoch goes on
with the next step index. The test env is re-seeded from `test_seed` at every test.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

from components.data.base import ResumableLoader, keep_batch
from components.kinds import Kind
from components.types import NonNegativeInt, PositiveInt

Env = Annotated[Any, Kind("envs")]


def flat_width(space: Any) -> int:
    """Width of a (dict of) Box observation(s) flattened, without an `action_mask` key."""
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, dict):
        return sum(flat_width(s) for k, s in spaces.items() if k != "action_mask")
    return int(np.prod(space.shape))


class Rollouts(L.LightningDataModule):
    """The environment as data (module docstring).

    Args:
        env: The environment (`envs` kind); one rollout = its num_envs episodes.
        iterations: Rollouts (training steps) per epoch.
        test_batches: Evaluation rollouts in the test phase.
        seed: Seeds the train env once, at the first setup (write `${seed}`).
        test_seed: Seeds the test env at every test; default seed + 1000003.
    """

    def __init__(self, env: Env, iterations: PositiveInt = 100, test_batches: PositiveInt = 8,
                 seed: NonNegativeInt = 0, test_seed: NonNegativeInt | None = None) -> None:
        super().__init__()
        if not hasattr(env, "num_envs") or not hasattr(env, "single_action_space"):
            raise TypeError(f"data.env: rollouts collect whole episodes from a gymnasium vector env (num_envs, "
                            f"single_action_space), and {type(env).__name__} is not one; a differentiable plant "
                            f"(the motor family's) is trained by its own task (plant_bptt), not by rollouts")
        self.env, self.iterations, self.test_batches = env, iterations, test_batches
        self.seed = seed
        self.test_seed = seed + 1_000_003 if test_seed is None else test_seed
        self._seeded = False
        self.test_env: Any = None

    def info(self) -> dict[str, int]:
        space = self.env.single_action_space
        actions = int(space.n) if hasattr(space, "n") else int(np.prod(space.shape))  # Discrete, or Box dims
        return {"in_features": flat_width(self.env.single_observation_space), "num_actions": actions}

    def setup(self, stage: str | None = None) -> None:
        if not self._seeded:
            self.env.reset(seed=self.seed)
            self._seeded = True
        if stage in (None, "test"):
            from components.rl.envs import env_layers

            self.test_env = copy.deepcopy(self.env)
            for layer in env_layers(self.test_env):
                if hasattr(layer, "update_running_mean"):  # normalize_observation: frozen at test
                    layer.update_running_mean = False
                if hasattr(layer, "use_test_split"):  # e.g. pd_serving's test_window of a trace file
                    layer.use_test_split()
            self.test_env.reset(seed=self.test_seed)

    def train_dataloader(self) -> DataLoader:
        return ResumableLoader(torch.arange(self.iterations), batch_size=None, collate_fn=keep_batch)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(torch.arange(self.test_batches), batch_size=None, collate_fn=keep_batch)

    def state_dict(self) -> dict[str, Any]:
        from components.rl.envs import env_state

        return {"env": env_state(self.env)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from components.rl.envs import load_env_state

        load_env_state(self.env, state["env"])
        self._seeded = True
