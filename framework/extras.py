"""Optional dependencies: the one import of a package that an extra brings, and the one message
when it is missing, naming the extra (pyproject.toml's [project.optional-dependencies])."""

from __future__ import annotations

import importlib
from typing import Any

# the package's import name -> the extra that installs it
EXTRAS = {
    "diffusers": "diffusion",
    "huggingface_hub": "diffusion",
    "transformers": "peft",  # also in the diffusion extra
    "peft": "peft",
    "h5py": "pde",
    "optuna": "distributed",
    "submitit": "distributed",
    "psycopg2": "distributed",
    "psutil": "distributed",
    "gymnasium": "rl",  # also in the motor extra
    "torchrl": "rl",
    "tensordict": "rl",
    "vmas": "rl",
    "motornet": "motor",
    "cvxpy": "sdp",
    "clarabel": "sdp",
    "scs": "sdp",
    "nilearn": "brain",
    "vbll": "vbll",
    "torch_geometric": "graph",
    "captum": "graph",
    "pynwb": "neural",
    "Bio": "bio",
}
# a package two extras bring -> the other one
ALSO = {"transformers": "diffusion", "gymnasium": "motor"}


def missing(module: str, what: str) -> str:
    """The message for `what` (a component, a command) that needs `module`."""
    extra = EXTRAS[module]
    also = f" or 'expspec[{ALSO[module]}]'" if module in ALSO else ""
    return f"{what} needs `{module}`, which comes with the optional extra '{extra}': pip install 'expspec[{extra}]'{also}"


def require(module: str, what: str = "this component") -> Any:
    """Import `module` (an optional dependency), or raise ImportError with `missing`'s message."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(missing(module.split(".")[0], what)) from error
