"""The claims table: printed by `exp reproduce`, logged as `claims.md`, written into the paper's
README.md between `<!-- claims:begin -->` and `<!-- claims:end -->`."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from framework.claims.evidence import Interval, Undecided
from framework.claims.outcome import Outcome
from framework.claims.schema import DEFAULT_TIER

BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"
NOT_RUN = "full tier, not run"


def _fmt(value: Any) -> str:
    if isinstance(value, (Interval, Undecided)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


WALL_CLOCK = "wall-clock: numbers vary by run"


def _kind(outcome: Outcome) -> str:
    over = {"mean": ", mean over seeds", "every_seed": ", every seed"}.get(outcome.claim.over or "", "")
    kind = "deviation of the headline" if outcome.claim.headline else outcome.claim.kind
    return kind + over + (f" ({WALL_CLOCK})" if outcome.claim.timing else "")


NO_RUN_CONTROL = "made-up numbers, not a run: no run control"


def _control(outcome: Outcome) -> str:
    control = outcome.claim.control
    text = control.text if control.is_run else f"{control.text} ({NO_RUN_CONTROL})"
    if outcome.control_passed is None:
        return text
    if outcome.control_error:
        return f"{text}: check raises ({outcome.control_error})"
    if outcome.control_undecided:
        return f"{text}: check not true (undecided: {outcome.control_undecided})"
    verdict = "check true: the claim cannot fail" if outcome.control_passed else "check false"
    return f"{text}: {verdict}"


def _claim(outcome: Outcome) -> str:
    claim = outcome.claim
    tier = "" if claim.tier == DEFAULT_TIER else f" ({claim.tier} tier)"
    says = f" (paper: \"{' '.join(claim.paper_says.split())}\")" if claim.paper_says else ""
    floor = f"; floor: {claim.floor.text}" if claim.floor else ""
    return f"**{claim.name}**{tier}: {claim.text}{says}{floor}"


def table(outcomes: list[Outcome]) -> str:
    """Markdown table: claim (its tier when not the default), its kind (and how it holds over
    seeds), the numbers the check read (and its error, if any), the negative control with the
    check's value on it, and the result (`Outcome.status`). A headline's cell quotes what the
    paper says; a claim with a floor names it (its numbers read `floor: ...`)."""
    lines = ["| claim | kind | numbers | negative control | result |", "|---|---|---|---|---|"]
    for o in outcomes:
        numbers = ", ".join(f"{k} = {_fmt(v)}" for k, v in o.numbers.items())
        if o.error:
            numbers = f"{numbers}; {o.error}" if numbers else o.error
        lines.append(f"| {_claim(o)} | {_kind(o)} | {numbers} | {_control(o)} | {o.status} |")
    return "\n".join(lines)


def headline(outcomes: list[Outcome]) -> str:
    """The first line of a report: `yes` when every headline claim held (and its control failed),
    `NO` when one failed or is a deviation that did not reproduce, else `inconclusive` when one
    could not be decided."""
    heads = [o for o in outcomes if o.claim.is_headline and o.ran]
    if not heads:
        return "headline reproduced: not run (full tier; `--full` runs it)"
    unsure = [o.claim.name for o in heads if o.inconclusive]
    missed = [o.claim.name for o in heads if not o.inconclusive
              and (o.failed or (o.claim.kind == "deviation" and not o.passed))]
    if missed:
        deviations = [o.claim.name for o in heads if o.claim.kind == "deviation" and not o.passed and not o.inconclusive]
        recorded = f"; recorded as deviation: {', '.join(deviations)}" if deviations else ""
        also = f"; inconclusive: {', '.join(unsure)}" if unsure else ""
        return f"headline reproduced: NO ({', '.join(missed)}{recorded}{also})"
    if unsure:
        return f"headline reproduced: inconclusive ({', '.join(unsure)})"
    return "headline reproduced: yes"


def heading(folder: str | Path, full: bool) -> str:
    """The line above the table: the command that produced it and the tiers it covers."""
    if full:
        return f"`exp reproduce --full {folder}` (default and full tiers):"
    return f"`exp reproduce {folder}` (default tier):"


def summary(outcomes: list[Outcome]) -> str:
    """`N of M claim(s) hold`, counting the headline and supporting claims that ran (a claim whose
    control passes too does not hold), then the deviations and the claims not run."""
    ran = [o for o in outcomes if o.ran and o.claim.kind != "deviation"]
    text = f"{sum(not o.failed and not o.inconclusive for o in ran)} of {len(ran)} claim(s) hold"
    unsure = sum(o.inconclusive for o in outcomes)
    if unsure:
        text += f"; {unsure} inconclusive"
    deviations = [o for o in outcomes if o.ran and o.claim.kind == "deviation" and not o.inconclusive]
    if deviations:
        text += f"; {sum(not o.passed for o in deviations)} deviation(s) recorded as not reproduced"
    failed_runs = sorted({a for o in outcomes for a in o.failed_runs})
    if failed_runs:
        text += f"; run(s) that did not finish: {', '.join(failed_runs)}"
    no_run_control = sum(o.ran and o.claim.kind != "deviation" and not o.claim.control.is_run for o in outcomes)
    if no_run_control:
        text += f"; {no_run_control} claim(s) without a run control"
    skipped = len(outcomes) - sum(o.ran for o in outcomes)
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


def readme_table(readme: Path) -> str | None:
    """The generated block of a paper's README (between the claims markers), or None."""
    content = readme.read_text() if readme.is_file() else ""
    if BEGIN not in content or END not in content:
        return None
    return content.split(BEGIN, 1)[1].split(END, 1)[0].strip()


# A number as the table prints it; after "± " it is a standard deviation (2 significant digits).
_NUMBER = re.compile(r"(± )?(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")
SIGNIFICANT, SD_SIGNIFICANT = 4, 2  # digits `_fmt` and seed_mean's "mean ± sd" print


def _unit(x: float, y: float, significant: int) -> float:
    """One unit of the last significant digit printed, at the larger magnitude of the two. By
    significant digits, not by the digits a string shows: `.4g` drops trailing zeros, so "0.75"
    stands for 0.7500 and must not pass for 0.7612."""
    magnitude = max(abs(x), abs(y))
    return 10.0 ** (math.floor(math.log10(magnitude)) - significant + 1) if magnitude else 0.0


def table_differences(written: str, fresh: str) -> list[str]:
    """Where a README's generated block and a fresh report differ: any text, or a number by more
    than two units of its last significant digit (4 printed, 2 for a "± sd"): a rerun on another
    CPU may round the last digit the other way; a changed result moves it further. Empty when
    they agree. A row of a `timing: true` claim (marked WALL_CLOCK) is compared on its text and
    result only: wall-clock numbers differ from run to run."""
    differences = []
    for i, (a, b) in enumerate(zip(written.splitlines(), fresh.splitlines())):
        if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
            differences.append(f"line {i + 1}: README {a!r} vs now {b!r}")
            continue
        if WALL_CLOCK in a:
            continue
        for (sd, x), (_, y) in zip(_NUMBER.findall(a), _NUMBER.findall(b)):
            tolerance = 2 * _unit(float(x), float(y), SD_SIGNIFICANT if sd else SIGNIFICANT)
            if abs(float(x) - float(y)) > tolerance * (1 + 1e-9):
                differences.append(f"line {i + 1}: README {sd}{x} vs now {sd}{y}")
    if len(written.splitlines()) != len(fresh.splitlines()):
        differences.append(f"README has {len(written.splitlines())} lines, now {len(fresh.splitlines())}")
    return differences
