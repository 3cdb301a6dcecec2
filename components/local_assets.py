"""Assets a paper-scale component reads from the local disk (weights, data files), never downloads.

`local_path` finds the file or folder a spec names, or the environment variable names, and says
what is missing and how to provide it; `DTYPES` is the one table of weight dtypes a spec may name.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

# The weight dtypes a spec names (`dtype: bfloat16`); a component's signature says which it takes.
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def local_path(component: str, kind: str, given: str | None, env: str, what: str, folder: bool = False,
               needs: tuple[str, ...] = (), how: str = "Put it there") -> str:
    """`given`, else the environment variable `env`: an existing file, or with `folder` (or
    `needs`) an existing folder holding every file named in `needs`. Otherwise a
    FileNotFoundError that says which component misses what, where it looked (and which of `needs`
    are missing), how to provide it (`how`) and which spec key (`kind`) or variable names it.
    Components call it in their constructor, so a run without its asset stops before any training."""
    resolved = given or os.environ.get(env)
    missing = [name for name in needs if not resolved or not (Path(resolved) / name).is_file()]
    found = bool(resolved) and (Path(resolved).is_dir() if folder or needs else Path(resolved).is_file())
    if not found or missing:
        where = f"{kind} = {given}" if given else f"${env} = {os.environ.get(env) or '(unset)'}"
        lacking = f"; missing {', '.join(missing)}" if missing else ""
        raise FileNotFoundError(f"{component}: {what} not found ({where}{lacking}). {how} and set {kind} "
                                f"or ${env}. Nothing is downloaded.")
    return str(resolved)
