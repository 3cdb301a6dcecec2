"""Lazy imports of the optional `diffusion` extra, with one clear message when it is missing."""

from __future__ import annotations

import importlib
from typing import Any

HINT = "install the optional extra: pip install -e '.[diffusion]' (diffusers, transformers)"


def require(module: str) -> Any:
    """Import `module` (e.g. "diffusers") or raise ImportError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{module} is needed here but is not installed; {HINT}") from error
