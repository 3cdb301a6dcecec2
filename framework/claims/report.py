"""The claims table: printed by `exp reproduce`, logged as `claims.md`, written into the paper's
README.md between `<!-- claims:begin -->` and `<!-- claims:end -->`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from framework.claims.expressions import Outcome
from framework.claims.schema import DEFAULT_TIER

BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"
NOT_RUN = "full tier, not run"


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _result(outcome: Outcome) -> str:
    if not outcome.ran:
        return NOT_RUN
    return "pass" if outcome.passed else "FAIL"


def table(outcomes: list[Outcome]) -> str:
    """Markdown table: claim (its tier when not the default), the numbers the check read (and its
    error, if any), and the result: `pass`, `FAIL`, or `full tier, not run`."""
    lines = ["| claim | numbers | result |", "|---|---|---|"]
    for o in outcomes:
        numbers = ", ".join(f"{k} = {_fmt(v)}" for k, v in o.numbers.items())
        if o.error:
            numbers = f"{numbers}; {o.error}" if numbers else o.error
        tier = "" if o.claim.tier == DEFAULT_TIER else f" ({o.claim.tier} tier)"
        lines.append(f"| **{o.claim.name}**{tier}: {o.claim.text} | {numbers} | {_result(o)} |")
    return "\n".join(lines)


def heading(folder: str | Path, full: bool) -> str:
    """The line above the table: the command that produced it and the tiers it covers."""
    if full:
        return f"`exp reproduce --full {folder}` (default and full tiers):"
    return f"`exp reproduce {folder}` (default tier):"


def summary(outcomes: list[Outcome]) -> str:
    """`N of M claim(s) hold`, counting the claims that ran, and how many were not run."""
    ran = [o for o in outcomes if o.ran]
    text = f"{sum(o.passed for o in ran)} of {len(ran)} claim(s) hold"
    skipped = len(outcomes) - len(ran)
    return text + (f"; {skipped} full-tier claim(s) not run (`--full` runs them)" if skipped else "")


def rewrite_readme(readme: Path, text: str) -> None:
    """Replace what is between the claims markers (appending a section when there are none)."""
    content = readme.read_text() if readme.is_file() else ""
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in content and END in content:
        head, rest = content.split(BEGIN, 1)
        content = head + block + rest.split(END, 1)[1]
    else:
        content = content.rstrip("\n") + f"\n\n## Claims\n\n{block}\n"
    readme.write_text(content)
