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
    with pytest.raises(FileNotFoundError, match=r"token_label_file: file of token-labelled responses .* not found "
                                                r"\(\$EXPSPEC_TOKENHD_DATA = \(unset\)\)\..*Nothing is downloaded"):
        run(SPEC, CPU)
    data = tmp_path / "tokenhd.jsonl"
    data.write_text(json.dumps({"input_ids": [1, 2, 3], "labels": [None, 0.0, 1.0]}) + "\n")
    monkeypatch.setenv("EXPSPEC_TOKENHD_DATA", str(data))
    with pytest.raises(FileNotFoundError, match=r"pretrained_causal_lm: local checkpoint .* not found \(\$EXPSPEC_QWEN3_0_6B_DIR = "
                                                r"\(unset\); missing config.json\).*Nothing is downloaded"):
        run(SPEC, CPU)


@pytest.mark.parametrize(("name", "env"), [
    ("qwen3_0_6b_plain_bce", "EXPSPEC_QWEN3_0_6B_DIR"), ("qwen3_0_6b_response", "EXPSPEC_QWEN3_0_6B_DIR"),
    ("qwen3_0_6b_confidence", "EXPSPEC_QWEN3_0_6B_DIR"), ("qwq_32b_judge", "EXPSPEC_QWQ_32B_DIR"),
    ("qwen3_8b", "EXPSPEC_QWEN3_8B_DIR")])
def test_the_paper_scale_arms_name_their_missing_checkpoint(
        name: str, env: str, tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The baselines, the weighting's ablation, the larger judge and the largest detector of the
    paper scale build from the same data and stop at their own checkpoint's variable."""
    data = tmp_path / "tokenhd.jsonl"
    data.write_text(json.dumps({"input_ids": [1, 2, 3], "labels": [None, 0.0, 1.0]}) + "\n")
    monkeypatch.setenv("EXPSPEC_TOKENHD_DATA", str(data))
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(FileNotFoundError, match=rf"pretrained_causal_lm: local checkpoint .* not found \(\${env} = \(unset\)"):
        run(SPEC.with_name(f"{name}.yaml"), CPU)
