"""The README's table of papers is the one `exp reproduce --write-readme` writes from the papers'
generated tables (framework.claims.papers): fast, reads files only."""

from __future__ import annotations

from pathlib import Path

from framework.claims import BEGIN, END
from framework.claims.papers import PAPERS_BEGIN, PAPERS_END, paper_row, papers_table, rewrite_papers_table, written_table

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_the_generated_one() -> None:
    written = written_table(ROOT / "README.md")
    assert written is not None, "README.md has no papers table markers"
    assert written == papers_table(ROOT), (
        "README.md's table of papers is stale: `exp reproduce specs/<paper>/ --write-readme` rewrites it")


def test_it_lists_every_paper_folder() -> None:
    folders = sorted(p.parent.name for p in (ROOT / "specs").glob("*/claims.yaml"))
    rows = [line for line in papers_table(ROOT).splitlines() if line.startswith("| [")]
    assert [row.split("]")[0][3:] for row in rows] == folders and folders


BLOCK = """`exp reproduce specs/toy/` (default tier):

**headline reproduced: NO (big_win)**

| claim | kind | numbers | negative control | result |
|---|---|---|---|---|
| **big_win**: t | deviation of the headline | x = 1 | c | NOT REPRODUCED |
| **small_ok**: t | supporting | x = 1 | c: check false | pass |
| **noisy**: t | supporting | x = [0.1, 0.3] | c | inconclusive: noisy |
| **broken**: t | supporting | x = 1 | c: check true: the claim cannot fail | FAIL: its control passes too |
| **later**: t (full tier) | supporting |  | c | full tier, not run |"""


def _paper(root: Path, name: str, block: str | None) -> Path:
    folder = root / "specs" / name
    folder.mkdir(parents=True)
    (folder / "claims.yaml").write_text(f"paper: {name}\n")
    body = f"\n\n{BEGIN}\n{block}\n{END}\n" if block is not None else "\nno table yet\n"
    (folder / "README.md").write_text(f"# {name}: a toy paper, with a colon: here{body}")
    return folder


def test_a_row_counts_the_results_of_the_generated_table(tmp_path: Path) -> None:
    row = paper_row(_paper(tmp_path, "toy", BLOCK))
    assert row == ("| [toy](specs/toy/README.md) | a toy paper, with a colon: here | NO | "
                   "1 hold, 1 inconclusive, 1 not reproduced, 1 fail, 1 full-tier not run |")
    assert "no generated table" in paper_row(_paper(tmp_path, "bare", None))


def test_write_readme_rewrites_only_between_the_markers(tmp_path: Path) -> None:
    folder = _paper(tmp_path, "toy", BLOCK)
    assert rewrite_papers_table(folder) is None  # no README with markers: nothing written
    (tmp_path / "README.md").write_text(f"# repo\n\n{PAPERS_BEGIN}\nold\n{PAPERS_END}\n\nafter\n")
    assert rewrite_papers_table(folder) == tmp_path / "README.md"
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("# repo\n\n") and text.endswith("\n\nafter\n") and "\nold\n" not in text
    assert written_table(tmp_path / "README.md") == papers_table(tmp_path)
    assert "1 papers." in text and "| [toy](specs/toy/README.md) |" in text
    assert rewrite_papers_table(tmp_path / "elsewhere" / "toy") is None  # not under specs/
