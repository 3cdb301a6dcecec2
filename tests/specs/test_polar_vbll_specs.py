"""polar_vbll's paper-scale spec stops at once, naming the asset, when its data or weights are not
on this machine (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

SPEC = Path(__file__).resolve().parents[2] / "specs/polar_vbll/arc_llm.yaml"


def test_without_data_or_weights_the_paper_spec_names_what_is_missing(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_ARC_CHALLENGE", raising=False)
    monkeypatch.delenv("EXPSPEC_QWEN25_7B_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"multiple-choice file \(.jsonl\) not found "
                                                r"\(\$EXPSPEC_ARC_CHALLENGE = \(unset\)\).*Nothing is downloaded"):
        run(SPEC, ["hardware.accelerator=cpu"])
    data = tmp_path / "arc.jsonl"
    data.write_text('{"question": "1 + 1?", "choices": ["2", "3"], "label": "A"}\n')
    monkeypatch.setenv("EXPSPEC_ARC_CHALLENGE", str(data))
    monkeypatch.setenv("EXPSPEC_QWEN25_7B_DIR", str(tmp_path / "no-checkpoint"))
    with pytest.raises(FileNotFoundError, match=r"tokenizer folder not found \(\$EXPSPEC_QWEN25_7B_DIR = .*no-checkpoint\)"):
        run(SPEC, ["hardware.accelerator=cpu"])
