"""lora_reeval's paper-scale spec stops at once, naming the asset, when its data or weights are
not on this machine (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

pytest.importorskip("peft")

SPEC = Path(__file__).resolve().parents[2] / "specs/lora_reeval/qwen25_metamath.yaml"


def test_without_data_or_weights_the_paper_spec_names_what_is_missing(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_METAMATHQA", raising=False)
    monkeypatch.delenv("EXPSPEC_QWEN25_1_5B_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"instruction file \(.jsonl\) not found \(\$EXPSPEC_METAMATHQA = \(unset\)\)"
                                                r".*Nothing is downloaded"):
        run(SPEC, ["hardware.accelerator=cpu", "hardware.precision=32-true"])
    data = tmp_path / "metamathqa.jsonl"
    data.write_text('{"query": "1 + 1?", "response": "2"}\n')
    monkeypatch.setenv("EXPSPEC_METAMATHQA", str(data))
    monkeypatch.setenv("EXPSPEC_QWEN25_1_5B_DIR", str(tmp_path / "no-checkpoint"))
    with pytest.raises(FileNotFoundError, match=r"tokenizer folder not found \(\$EXPSPEC_QWEN25_1_5B_DIR = .*no-checkpoint\)"):
        run(SPEC, ["hardware.accelerator=cpu", "hardware.precision=32-true"])
    (tmp_path / "no-checkpoint").mkdir()  # a folder without config.json: the model says so
    with pytest.raises(FileNotFoundError, match=r"pretrained_causal_lm: local checkpoint .* not found \(\$EXPSPEC_QWEN25_1_5B_DIR = "
                                                r".*no-checkpoint; missing config.json\).*Nothing is downloaded"):
        run(SPEC, ["hardware.accelerator=cpu", "hardware.precision=32-true"])
