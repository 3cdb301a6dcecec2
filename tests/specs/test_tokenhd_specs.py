"""tokenhd's paper-scale spec stops at once, naming the asset, when its data or weights are not on
this machine (nothing is downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.runner import run

SPEC = Path(__file__).resolve().parents[2] / "specs/tokenhd/qwen3_0_6b.yaml"
CPU = ["hardware.accelerator=cpu", "hardware.precision=32-true"]


def test_without_data_or_weights_the_paper_spec_names_what_is_missing(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_TOKENHD_DATA", raising=False)
    monkeypatch.delenv("EXPSPEC_QWEN3_0_6B_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_label_file: no local file of token-labelled responses "
                                                r"\(\$EXPSPEC_TOKENHD_DATA = \(unset\);.*Nothing is downloaded"):
        run(SPEC, CPU)
    data = tmp_path / "tokenhd.jsonl"
    data.write_text(json.dumps({"input_ids": [1, 2, 3], "labels": [None, 0.0, 1.0]}) + "\n")
    monkeypatch.setenv("EXPSPEC_TOKENHD_DATA", str(data))
    with pytest.raises(FileNotFoundError, match=r"pretrained_causal_lm: no local checkpoint \(\$EXPSPEC_QWEN3_0_6B_DIR = "
                                                r"\(unset\); a folder with config.json.*Nothing is downloaded"):
        run(SPEC, CPU)
