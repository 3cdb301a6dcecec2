"""char_text and token_file: contiguous splits, next-token targets, deterministic vocabulary."""

from pathlib import Path

import numpy as np
import pytest

from components.data.text import CharText, TokenFile, contiguous_splits, pydoc_topics_text


def test_char_text_windows_are_next_token_pairs_of_contiguous_splits():
    data = CharText(seq_len=16, max_chars=20_000)
    train, val, test = (data.split(s) for s in ("train", "val", "test"))
    assert train["x"].shape[1] == 16 and (train["x"][:, 1:] == train["y"][:, :-1]).all()
    text = pydoc_topics_text()[:20_000]
    # train is the first 80%, val the next 10%, test the last 10%, in order
    assert data.decode(train["x"][0].tolist()) == text[:16]
    assert data.decode(val["x"][0].tolist()) == text[16_000 : 16_016]
    assert data.decode(test["x"][0].tolist()) == text[18_000 : 18_016]
    assert len(train["x"]) == (16_000 - 1) // 16
    assert data.vocab == sorted(set(text)) and data.info() == {"vocab_size": len(data.vocab), "seq_len": 16}


def test_pydoc_topics_vocabulary_is_what_the_tiny_lm_spec_says():
    """specs/sae_replay/tiny_lm.yaml writes vocab_size: 103 (checked by the language_modeling task)."""
    assert CharText().info()["vocab_size"] == 103


def test_char_text_file_corpus(tmp_path: Path):
    (tmp_path / "t.txt").write_text("abcabcabc" * 100)
    data = CharText(corpus="file", path=str(tmp_path / "t.txt"), seq_len=4)
    assert data.vocab == ["a", "b", "c"]
    with pytest.raises(FileNotFoundError, match="char_text: text file not found: .*nope.txt"):
        CharText(corpus="file", path=str(tmp_path / "nope.txt")).setup()


@pytest.mark.parametrize("kwargs, message", [
    ({"corpus": "file"}, "path must be given exactly when corpus is 'file', got corpus='file', path=None"),
])
def test_char_text_rejects(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CharText(**kwargs)


@pytest.mark.parametrize("arguments, problems", [
    ({"seq_len": 0}, {"seq_len": "must be >= 1, got integer 0"}),
    ({"val_fraction": 0.0, "test_fraction": 1.0}, {"val_fraction": "must be > 0 and < 1, got number 0.0",
                                                   "test_fraction": "must be > 0 and < 1, got number 1.0"}),
    ({"max_chars": 1}, {"max_chars": "must be >= 2, got integer 1"}),
    ({"seq_len": 1, "max_chars": 2, "val_fraction": 0.5}, {}),
])
def test_char_text_argument_ranges(argument_problems, arguments, problems):
    assert argument_problems("data", "char_text", **arguments) == problems


def test_token_file_reads_npy_and_names_the_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ids = np.arange(1000, dtype=np.uint32) % 50
    np.save(tmp_path / "ids.npy", ids)
    monkeypatch.setenv("MY_TOKENS", str(tmp_path / "ids.npy"))
    data = TokenFile(vocab_size=50, env="MY_TOKENS", seq_len=10, val_fraction=0.1, test_fraction=0.1)
    assert data.split("train")["x"][0].tolist() == list(range(10))
    monkeypatch.delenv("MY_TOKENS")
    with pytest.raises(FileNotFoundError, match=r"token ids not found \(\$MY_TOKENS = \(unset\)\).*Nothing is downloaded"):
        TokenFile(vocab_size=50, env="MY_TOKENS")
    with pytest.raises(ValueError, match=r"ids must be in \[0, 10\), got \[0, 49\]"):
        TokenFile(vocab_size=10, path=str(tmp_path / "ids.npy"), seq_len=10).setup()


def test_contiguous_splits_drop_short_tails():
    splits = contiguous_splits(np.arange(105), seq_len=10, val_fraction=0.2, test_fraction=0.2)
    assert [len(splits[s]["x"]) for s in ("train", "val", "test")] == [6, 2, 2]
