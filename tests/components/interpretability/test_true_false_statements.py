"""true_false_statements (paper scale): statements from a local CSV as left-padded prompts for a
pretrained LM, read end to end by latent_debate on a tiny random Llama built offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from components.interpretability.debate import LatentDebate
from components.interpretability.statements import IGNORE, TrueFalseStatementsFile, prompt_rows

transformers = pytest.importorskip("transformers")
WORDS = ["[PAD]", "[UNK]", "is", "the", "sky", "blue", "grass", "red", "snow", "cold", "hot", "Answer", "True", "False"]


def _checkpoint(folder: Path) -> None:
    """A word-level tokenizer and a random 2-layer Llama over its words, saved like a hub checkpoint."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    fast.save_pretrained(folder)
    config = transformers.LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)


def _csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("statement,label\n" + "".join(f"{s},{l}\n" for s, l in rows))
    return path


def test_prompt_rows_pad_on_the_left() -> None:
    out = prompt_rows([[5, 6, 7], [8]], [1, 0], pad_id=0, true_id=12, false_id=13)
    assert out["x"].tolist() == [[5, 6, 7], [0, 0, 8]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert out["y"].tolist() == [[IGNORE, IGNORE, 12], [IGNORE, IGNORE, 13]]


def test_missing_file_and_bad_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_STATEMENTS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"true_false_statements: statements file \(.csv\) not found "
                                                r"\(\$MY_STATEMENTS = \(unset\)\).*Nothing is downloaded"):
        TrueFalseStatementsFile(env="MY_STATEMENTS", tokenizer=str(tmp_path))
    bad = _csv(tmp_path / "bad.csv", [("the sky is blue", "true"), ("snow is hot", "maybe")])
    with pytest.raises(ValueError, match=r"bad.csv:3: label 'maybe' is none of"):
        TrueFalseStatementsFile(path=str(bad), tokenizer=str(tmp_path)).rows()


def test_latent_debate_reads_a_local_llama(tmp_path: Path) -> None:
    from components.models.pretrained_lm import PretrainedCausalLM

    _checkpoint(tmp_path)
    facts = [("the sky is blue", "true"), ("the sky is red", "false"), ("grass is red", "false"),
             ("snow is cold", "true"), ("snow is hot", "false"), ("the grass is blue", "false")]
    data = TrueFalseStatementsFile(path=str(_csv(tmp_path / "facts.csv", facts * 40)), tokenizer=str(tmp_path),
                                   template="{statement} Answer", true_word="True", false_word="False")
    data.setup()
    test = data.split("test")
    assert (test["y"][:, -1] == torch.where(test["label"] == 1, 12, 13)).all()
    assert (test["x"][:, -1] == WORDS.index("Answer")).all()                  # every prompt ends last
    model = PretrainedCausalLM(path=str(tmp_path), dtype="float32")
    out = LatentDebate(interpreter="logit_lens", layers=[2])(model, {s: data.split(s) for s in ("val", "test")})
    assert out["agreement"] == 1.0  # the last layer's lens is the model's own answer
