"""The repository README's table of papers: one row per `specs/<paper>/` with a claims.yaml, read
from the paper's own README (its title line and the block `exp reproduce --write-readme` wrote),
so the table carries no number that the papers' generated tables do not.

`exp reproduce specs/<paper>/ --write-readme` rewrites it (between `<!-- papers:begin -->` and
`<!-- papers:end -->` of the README two folders above the paper's), and a test requires it to
equal `papers_table(root)`: a paper added, re-recorded or removed without rewriting it fails.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from framework.claims.report import NOT_RUN, readme_table
from framework.discovery import CLAIMS_FILE

PAPERS_BEGIN, PAPERS_END = "<!-- papers:begin -->", "<!-- papers:end -->"
HEADER = ("| paper | what it is | headline reproduced | claims (as its README table reports them) |\n"
          "|---|---|---|---|")
_HEADLINE = re.compile(r"\*\*headline reproduced: (\w+)")
_RESULT = re.compile(r"^\| \*\*[a-z0-9_]+\*\*.*\| ([^|]*) \|$", re.MULTILINE)


def _result_kind(cell: str) -> str:
    """A result cell (`Outcome.status`) as the word the row counts it under."""
    if cell == "pass":
        return "hold"
    if cell.startswith("inconclusive"):
        return "inconclusive"
    if cell == NOT_RUN:
        return "full-tier not run"
    if cell.startswith("reproduced after all"):
        return "deviation reproduced after all"
    if cell.startswith("NOT REPRODUCED"):
        return "not reproduced"
    return "fail"


def paper_row(folder: Path) -> str:
    """`| [paper](specs/paper/README.md) | title | yes/NO/inconclusive/not written | counts |`,
    from the paper's README: its first line `# paper: title` and its generated claims block."""
    readme = folder / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    first = text.splitlines()[0] if text else ""
    title = first.split(":", 1)[1].strip() if first.startswith("# ") and ":" in first else ""
    block = readme_table(readme)
    link = f"[{folder.name}](specs/{folder.name}/README.md)"
    if block is None:
        return f"| {link} | {title} | no generated table (`exp reproduce --write-readme`) | |"
    status = _HEADLINE.search(block)
    counts = Counter(_result_kind(cell.strip()) for cell in _RESULT.findall(block))
    order = ["hold", "inconclusive", "not reproduced", "deviation reproduced after all", "fail", "full-tier not run"]
    summary = ", ".join(f"{counts[k]} {k}" for k in order if counts[k])
    return f"| {link} | {title} | {status.group(1) if status else 'not run'} | {summary} |"


def papers_table(root: Path) -> str:
    """The table for every `specs/<paper>/` of `root` that has a claims file, by name."""
    folders = sorted(p.parent for p in (root / "specs").glob(f"*/{CLAIMS_FILE}"))
    rows = [paper_row(folder) for folder in folders]
    return f"{len(folders)} papers.\n\n{HEADER}\n" + "\n".join(rows)


def written_table(readme: Path) -> str | None:
    """What is between the papers markers of `readme`, or None when it has none."""
    content = readme.read_text() if readme.is_file() else ""
    if PAPERS_BEGIN not in content or PAPERS_END not in content:
        return None
    return content.split(PAPERS_BEGIN, 1)[1].split(PAPERS_END, 1)[0].strip()


def rewrite_papers_table(paper_folder: Path) -> Path | None:
    """Rewrite the table in the README of the repository holding `specs/<paper>/`; the README
    rewritten, or None when the folder is not under a `specs/` folder or that README has no
    markers (a paper folder outside a checkout of expspec)."""
    folder = paper_folder.resolve()
    if folder.parent.name != "specs":
        return None
    root = folder.parent.parent
    readme = root / "README.md"
    if written_table(readme) is None:
        return None
    head, rest = readme.read_text().split(PAPERS_BEGIN, 1)
    tail = rest.split(PAPERS_END, 1)[1]
    readme.write_text(f"{head}{PAPERS_BEGIN}\n{papers_table(root)}\n{PAPERS_END}{tail}")
    return readme
