"""Every paper's README agrees with its claims: the headline quotes the abstract (quoted in the
README, and equal to the shared paper list's where that is at hand), and no prose outside the
generated table calls a claim reproduced that the table reports as failed, inconclusive or not
reproduced, nor states a headline status other than the table's. Fast: reads files only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from framework.claims import BEGIN, END, load_claims

ROOT = Path(__file__).resolve().parents[2]
PAPERS = sorted(p.parent for p in (ROOT / "specs").glob("*/claims.yaml"))
SHARED = ROOT.parent / "shared" / "papers"  # the paper list, next to a checkout (absent in a bare clone)


def _words(text: str) -> str:
    return " ".join(text.split())


def readme_abstract(readme: str) -> str | None:
    """The abstract quoted under `## Abstract` (its `> ` lines, joined), or None."""
    match = re.search(r"^## Abstract\n\n((?:> .*\n?)+)", readme, re.MULTILINE)
    return _words(" ".join(line[2:] for line in match.group(1).splitlines())) if match else None


def shared_abstract(paper: str) -> str | None:
    path = SHARED / f"{paper}.md"
    if not path.is_file():
        return None
    text = path.read_text()
    return _words(text.split("):", 1)[1]) if "):" in text else None


@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_the_headline_quotes_the_abstract(folder: Path) -> None:
    readme = (folder / "README.md").read_text()
    abstract = readme_abstract(readme)
    assert abstract, f"{folder / 'README.md'}: no `## Abstract` section quoting the abstract (`> ...`)"
    shared = shared_abstract(folder.name)
    if shared is not None:
        assert abstract == shared, f"{folder / 'README.md'}: the quoted abstract differs from {SHARED / folder.name}.md"
    claims, _ = load_claims(folder)
    heads = [c for c in claims.claims if c.is_headline]
    assert heads and all(c.paper_says for c in heads)
    for claim in heads:
        for fragment in _words(claim.paper_says or "").split(" ... "):
            assert fragment in abstract, f"{folder.name}: {claim.name}'s paper_says is not the abstract's words: {fragment!r}"


def _rows(block: str) -> dict[str, str]:
    """claim name -> its result cell, from a generated table."""
    rows = {}
    for line in block.splitlines():
        match = re.match(r"\| \*\*([a-z0-9_]+)\*\*.*\| ([^|]*) \|$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


_SAYS_HOLDS = re.compile(r"\b(reproduces|reproduced|holds|hold|passes|confirmed|confirms|met)\b")
_SAYS_NOT = re.compile(r"\b(not|no|NO|NOT|fail|fails|failed|FAIL|inconclusive|deviation|cannot|never|misses|missed)\b")


def prose_problems(readme: str) -> list[str]:
    """Sentences outside the generated block that contradict it: a headline status other than
    the block's, or a claim named as holding (reproduced, holds, passes, ...) with no negation in
    the sentence while its result is FAIL, inconclusive or NOT REPRODUCED."""
    if BEGIN not in readme or END not in readme:
        return ["no generated claims table"]
    head, rest = readme.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    prose = head + tail
    problems = []
    status = re.search(r"headline reproduced: (\w+)", block)
    for said in re.findall(r"headline reproduced:?\**:? ?\**(\w+)", prose, re.IGNORECASE):
        if status and said.lower() != status.group(1).lower():
            problems.append(f"prose says 'headline reproduced: {said}', the table '{status.group(1)}'")
    rows = _rows(block)
    sentences = re.split(r"(?<=[.;!?])\s+|\n\s*\n|\n[-*|] ", prose)
    for name, result in rows.items():
        if result.startswith("pass") or result.startswith("full tier"):
            continue
        for sentence in sentences:
            if f"`{name}`" in sentence and _SAYS_HOLDS.search(sentence) and not _SAYS_NOT.search(sentence):
                problems.append(f"prose calls `{name}` holding, the table says '{result}': {_words(sentence)[:160]!r}")
    return problems


@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_readme_prose_agrees_with_its_table(folder: Path) -> None:
    problems = prose_problems((folder / "README.md").read_text())
    assert not problems, f"{folder / 'README.md'}:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "prose, problem",
    [
        ("The headline reproduced: yes.", "prose says 'headline reproduced: yes', the table 'NO'"),
        ("Here `gap_falls` is reproduced at tiny scale.", "prose calls `gap_falls` holding, the table says 'FAIL'"),
        ("Here `gap_falls` is not reproduced at tiny scale.", None),
        ("Here `small_ok` holds.", None),
        ("`noisy` holds within the seeds' spread.", "prose calls `noisy` holding, the table says 'inconclusive: x'"),
    ],
    ids=["headline status", "failed claim called reproduced", "negated", "passing claim", "inconclusive claim"],
)
def test_prose_check_catches_contradictions(prose: str, problem: str | None) -> None:
    block = ("**headline reproduced: NO (gap_falls)**\n\n| claim | kind | numbers | control | result |\n|---|---|---|---|---|\n"
             "| **gap_falls**: t | headline | x = 1 | c | FAIL |\n| **small_ok**: t | supporting | x = 1 | c | pass |\n"
             "| **noisy**: t | supporting | x = 1 | c | inconclusive: x |")
    problems = prose_problems(f"# p\n\n{prose}\n\n{BEGIN}\n{block}\n{END}\n")
    assert problems == ([] if problem is None else [p for p in problems if p.startswith(problem)]) and (
        problem is None or problems), problems


# Headline and supporting claims whose only control is made-up numbers (issue 30: a control is a
# real run). Each is a debt the table shows as "no run control"; the list may only shrink: a claim
# given a run control leaves it, and a new claim without one fails here.
WITHOUT_RUN_CONTROL: dict[str, set[str]] = {
    "sae_replay": {"dense_sweep_non_increasing"},
}


def test_claims_without_a_run_control_are_the_known_ones() -> None:
    found = {}
    for folder in PAPERS:
        claims, _ = load_claims(folder)
        names = {c.name for c in claims.claims if c.kind != "deviation" and not c.control.is_run}
        if names:
            found[folder.name] = names
    assert found == WITHOUT_RUN_CONTROL
