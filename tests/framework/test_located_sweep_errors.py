"""Mistakes in a sweep axis or an `init:` spec exit 2 with the spec file's line (issue 32): before,
a non-ASCII digit in a grid key crashed `exp validate` (`error: ValueError`, exit 1), an axis
mistake read like an override the user typed (no file, no line), and a missing init spec passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.cli import main

ROOT = Path(__file__).resolve().parents[2]
BASE = f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\n"


@pytest.mark.parametrize(("text", "says"), [
    ("sweep: {grid: {metrics.².type: [accuracy]}}\n",
     "s.yaml:2:16: metrics: sweep axis metrics.².type=accuracy: index '²' is not valid for a list of 3 item(s)"),
    ("sweep: {grid: {optimizer.lrr: [0.1, 0.2]}}\n",
     "s.yaml:2:16: optimizer.lrr: sweep axis optimizer.lrr=0.1: adam has no argument 'lrr'. Did you mean 'lr'?"),
    ("sweep:\n  zip: {optimizer.lr: [0.1, null]}\n",
     "s.yaml:3:9: optimizer.lr: sweep axis optimizer.lr=null: expected a number > 0, got null"),
    ("init: {spec: no_such.yaml}\n",
     "s.yaml:2:14: init.spec: no spec file "),
])
def test_a_mistake_exits_2_on_the_spec_files_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], text: str, says: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(BASE + text)
    assert main(["validate", "--no-cache", "s.yaml"]) == 2
    out = capsys.readouterr()
    assert says in out.out + out.err, out.out + out.err


def test_a_missing_init_spec_created_later_is_valid_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The file's absence is a recorded input of the cached result (framework/validate_cache.py)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(tmp_path / "cache"))  # the cache on: a result is stored
    (tmp_path / "s.yaml").write_text(BASE + "init: {spec: up.yaml}\n")
    assert main(["validate", "s.yaml"]) == 2
    (tmp_path / "up.yaml").write_text(BASE)
    assert main(["validate", "s.yaml"]) == 0
