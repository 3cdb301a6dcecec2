"""Assets a paper-scale component reads from the local disk (weights, data files), never downloads.

`local_path` finds the file or folder a spec names, or the environment variable names, and says
what is missing and how to provide it; `resolve_local` finds a Hugging Face model (a local folder,
or the local Hugging Face cache) under `offline()`, which keeps the Hugging Face libraries from
downloading; `DTYPES` is the one table of weight dtypes a spec may name. Shared by the diffusion
and editing families (and any paper-scale component that loads local weights).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import torch

from framework.extras import require

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


@contextlib.contextmanager
def offline() -> Any:
    """Hugging Face libraries in offline mode for the block: local files only, never a download
    (the environment variables are restored afterwards). Every local-weights loader uses it."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def missing_message(model_id: str, family: str, looked: str, marker: str = "model_index.json",
                    random_init: bool = True) -> str:
    """Why a model is missing and the ways to provide it (`marker`: the file a local folder of it
    holds; `random_init`: whether the component can build random weights instead)."""
    ways = "three" if random_init else "two"
    return (
        f"model '{model_id}' ({family}) is not available locally: {looked}. Nothing is downloaded at run time. "
        f"Provide it in one of {ways} ways: (1) on a machine with network run `huggingface-cli download {model_id}` "
        f"and copy the cache (~/.cache/huggingface/hub, or $HF_HOME/hub, or $HF_HUB_CACHE) to this machine; "
        f"(2) set model.local_dir to a {'diffusers-format ' if marker == 'model_index.json' else ''}folder (with {marker})"
        + ("; (3) for timing only, build random weights with model.random_init=true." if random_init else ".")
    )


def resolve_local(model_id: str, family: str, local_dir: str | None, revision: str | None,
                  marker: str = "model_index.json", random_init: bool = True) -> str:
    """The local folder of the model, or FileNotFoundError with `missing_message`. Any Hugging Face
    model id works (diffusers pipelines, transformers models: `marker` "config.json")."""
    if local_dir is not None:
        folder = Path(local_dir).expanduser()
        if not (folder / marker).is_file():
            raise FileNotFoundError(missing_message(model_id, family, f"model.local_dir '{folder}' has no {marker}",
                                                    marker, random_init))
        return str(folder)
    hub = require("huggingface_hub")
    try:
        with offline():
            return hub.snapshot_download(model_id, revision=revision, local_files_only=True)
    except Exception as error:  # LocalEntryNotFoundError, or an offline-mode error, by version
        from huggingface_hub.constants import HF_HUB_CACHE

        raise FileNotFoundError(missing_message(model_id, family, f"not in the Hugging Face cache {HF_HUB_CACHE}",
                                                marker, random_init)) from error
