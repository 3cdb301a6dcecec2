"""components/data/instructions.py: instruction pairs as causal-LM windows, loss on the response."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from components.data.instructions import IGNORE, InstructionJSONL, response_windows

WORDS = ["<pad>", "</s>", "what", "is", "two", "plus", "three", "five", "Q:", "A:"]


def test_labels_are_the_next_response_tokens_only() -> None:
    windows = response_windows([[10, 11, 12]], [[20, 21, 1]], seq_len=8, pad_id=0)
    assert windows["x"].tolist() == [[10, 11, 12, 20, 21, 0, 0, 0]]
    # position t predicts token t+1: the prompt's own next tokens (11, 12) are not learned
    assert windows["y"].tolist() == [[IGNORE, IGNORE, 20, 21, 1, IGNORE, IGNORE, IGNORE]]


def test_long_examples_are_cut_to_the_window() -> None:
    windows = response_windows([[10, 11]], [[20, 21, 22, 23, 1]], seq_len=4, pad_id=0)
    assert windows["x"].tolist() == [[10, 11, 20, 21]]
    assert windows["y"].tolist() == [[IGNORE, 20, 21, 22]]


def tokenizer_folder(folder: Path) -> Path:
    """A word-level tokenizer saved as a Hugging Face checkpoint folder would hold it."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    model = tokenizers.models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<pad>")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    fast.save_pretrained(str(folder))
    return folder


def test_a_jsonl_file_through_a_local_tokenizer(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text("\n".join(json.dumps({"query": "what is two plus three", "response": "five"}) for _ in range(10)))
    module = InstructionJSONL(path=str(data), tokenizer=str(tokenizer_folder(tmp_path / "tok")), template="Q: {prompt} A:",
                              seq_len=9, val_fraction=0.2, test_fraction=0.2)
    assert module.info() == {"vocab_size": len(WORDS), "seq_len": 9}
    train = module.split("train")
    ids = [WORDS.index(w) for w in "Q: what is two plus three A: five </s>".split()]
    np.testing.assert_array_equal(train["x"][0].numpy(), ids[:-1] + [0])
    np.testing.assert_array_equal(train["y"][0].numpy(), [IGNORE] * 6 + [WORDS.index("five"), 1, IGNORE])
    assert len(train["x"]) == 6


def test_a_missing_field_is_named_with_its_line(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({"query": "what", "response": "five"}) + "\n" + json.dumps({"question": "what"}) + "\n")
    module = InstructionJSONL(path=str(data), tokenizer=str(tmp_path))
    with pytest.raises(ValueError) as error:
        module.rows()
    assert str(error.value) == f"{data}:2: no field 'query' (fields: ['question'])"


def test_missing_assets_fail_at_construction_saying_how_to_provide_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXPSPEC_INSTRUCTIONS", raising=False)
    with pytest.raises(FileNotFoundError) as error:
        InstructionJSONL()
    assert str(error.value) == ("instruction_jsonl: instruction file (.jsonl) not found ($EXPSPEC_INSTRUCTIONS = (unset)). "
                                "Put it there and set data.path or $EXPSPEC_INSTRUCTIONS. Nothing is downloaded.")
    data = tmp_path / "pairs.jsonl"
    data.write_text("")
    with pytest.raises(FileNotFoundError) as error:
        InstructionJSONL(path=str(data), tokenizer=str(tmp_path / "absent"))
    assert str(error.value) == (f"instruction_jsonl: tokenizer folder not found (data.tokenizer = {tmp_path / 'absent'}). "
                                "Put it there and set data.tokenizer or $EXPSPEC_LM_DIR. Nothing is downloaded.")
