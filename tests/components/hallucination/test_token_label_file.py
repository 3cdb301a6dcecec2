"""token_label_file: token-labelled responses from a local JSON-lines file, padded and masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.hallucination.data import IGNORE, TokenLabelFile, read_token_labels


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_responses_are_padded_cut_and_masked_where_labels_are_null(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [
        {"input_ids": [5, 6, 7], "labels": [None, 0.25, 1.0]},
        {"input_ids": [8, 9, 10, 11, 12], "labels": [None, None, 0.0, 0.5, 1.0]},
    ])
    arrays = read_token_labels(path, max_len=4, pad_id=99)
    assert arrays["x"].tolist() == [[5, 6, 7, 99], [8, 9, 10, 11]]
    assert arrays["mask"].tolist() == [[False, True, True, False], [False, False, True, True]]
    assert arrays["labels"].tolist() == [[0.0, 0.25, 1.0, 0.0], [0.0, 0.0, 0.0, 0.5]]
    assert arrays["y"].tolist() == [[6, 7, IGNORE, IGNORE], [9, 10, 11, IGNORE]]


@pytest.mark.parametrize("row, message", [
    ({"input_ids": [1, 2], "labels": [0.0]}, r"r.jsonl:1: needs 'input_ids' and 'labels' lists of equal length"),
    ({"input_ids": [1, 2], "labels": [0.0, 1.5]}, r"r.jsonl:1: labels must be in \[0, 1\] or null"),
], ids=["lengths", "range"])
def test_bad_rows_are_located(tmp_path: Path, row: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_token_labels(write_rows(tmp_path / "r.jsonl", [row]), max_len=4, pad_id=0)


def test_a_missing_file_fails_at_construction_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_LABELS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"token_label_file: file of token-labelled responses .* not found "
                                                r"\(\$MY_LABELS = \(unset\)\).*Nothing is downloaded"):
        TokenLabelFile(env="MY_LABELS")
