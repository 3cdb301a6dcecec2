"""causim's paper-scale specs stop at once, naming the asset, when the LLM's weights are not on
this machine (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

pytest.importorskip("peft")

SPECS = Path(__file__).resolve().parents[2] / "specs/causim"


@pytest.mark.parametrize("name", ["qwen25_7b_curriculum.yaml", "qwen25_7b_flat.yaml", "qwen25_7b_flat_small.yaml"])
def test_without_weights_the_paper_spec_names_what_is_missing(
        name: str, tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = ["hardware.accelerator=cpu", "hardware.precision=32-true"]
    monkeypatch.delenv("EXPSPEC_CAUSIM_LM_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"causal_queries: no local tokenizer folder \(\$EXPSPEC_CAUSIM_LM_DIR = "
                                                r"\(unset\)\).*Nothing is downloaded"):
        run(SPECS / name, overrides)
    (tmp_path / "no-checkpoint").mkdir()  # a folder without config.json: the model says so
    monkeypatch.setenv("EXPSPEC_CAUSIM_LM_DIR", str(tmp_path / "no-checkpoint"))
    with pytest.raises(FileNotFoundError, match=r"pretrained_causal_lm: local checkpoint .* not found \(\$EXPSPEC_CAUSIM_LM_DIR = "
                                                r".*no-checkpoint; missing config.json\).*Nothing is downloaded"):
        run(SPECS / name, overrides)
