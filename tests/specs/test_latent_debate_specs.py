"""latent_debate's paper-scale spec stops at once, naming the asset, when its statements or
weights are not on this machine (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

SPEC = Path(__file__).resolve().parents[2] / "specs/latent_debate/llama3_8b.yaml"
CPU = ["hardware.accelerator=cpu"]


def test_without_statements_or_weights_the_paper_spec_names_what_is_missing(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_TF_STATEMENTS", raising=False)
    monkeypatch.delenv("EXPSPEC_LLAMA3_8B_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"statements file \(.csv\) not found \(\$EXPSPEC_TF_STATEMENTS = "
                                                r"\(unset\)\).*Nothing is downloaded"):
        run(SPEC, CPU)
    statements = tmp_path / "statements.csv"
    statements.write_text("statement,label\nThe sky is blue.,true\n")
    monkeypatch.setenv("EXPSPEC_TF_STATEMENTS", str(statements))
    monkeypatch.setenv("EXPSPEC_LLAMA3_8B_DIR", str(tmp_path / "no-checkpoint"))
    with pytest.raises(FileNotFoundError, match=r"tokenizer folder not found \(\$EXPSPEC_LLAMA3_8B_DIR = .*no-checkpoint\)"):
        run(SPEC, CPU)
    (tmp_path / "no-checkpoint").mkdir()  # a folder without config.json: the model says so
    with pytest.raises(FileNotFoundError, match=r"pretrained_causal_lm: local checkpoint .* not found \(\$EXPSPEC_LLAMA3_8B_DIR = "
                                                r".*no-checkpoint; missing config.json\).*Nothing is downloaded"):
        run(SPEC, CPU)
