"""The VLM judge's verdict parsing, and the paper-scale editor's failure without its weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.editing.paper import parse_verdict


@pytest.mark.parametrize(("text", "expected"), [
    ("The colour changed; the cat also moved.\nIMPLEMENTED: 8/10\nUNINTENDED: 3/10", (0.8, 0.3)),
    ("implemented: 10\nunintended: 0", (1.0, 0.0)),
    ("IMPLEMENTED: 2 UNINTENDED: 9 ... on reflection:\nIMPLEMENTED: 6\nUNINTENDED: 1.5", (0.6, 0.15)),  # the last pair
    ("IMPLEMENTED: 14\nUNINTENDED: 12", (1.0, 1.0)),   # clipped to [0, 1]
    ("I cannot tell.", (0.0, 1.0)),                      # no verdict: the worst one
])
def test_parse_verdict(text: str, expected: tuple[float, float]) -> None:
    assert parse_verdict(text) == pytest.approx(expected)


def test_editor_without_weights_names_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("diffusers")
    import huggingface_hub.constants

    from components.editing.paper import InstructPix2PixEditor

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(FileNotFoundError, match=r"model 'timbrooks/instruct-pix2pix' \(instruct_pix2pix\) is not "
                                                r"available locally.*Provide it in one of two ways.*with model_index.json\)\.$"):
        InstructPix2PixEditor()


def test_judge_without_weights_names_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    import huggingface_hub.constants

    from components.editing.paper import AgenticVLMJudge

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    with pytest.raises(FileNotFoundError, match=r"model 'Qwen/Qwen2.5-VL-7B-Instruct' \(vlm judge\).*with config.json\)\.$"):
        AgenticVLMJudge()
    with pytest.raises(FileNotFoundError, match=r"model.local_dir '.*nowhere' has no config.json"):
        AgenticVLMJudge(local_dir=str(tmp_path / "nowhere"))
