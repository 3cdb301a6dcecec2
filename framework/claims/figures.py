"""One small figure per claim, written by `exp reproduce --write-readme` and linked under the README's
table: what the check read, and what it tested.

Where: the figures of `<root>/specs/<paper>/` are `<root>/docs/claims/<paper>/<claim>.png` (a specs
folder holds only YAML and README files: framework/discovery.py); a paper folder elsewhere keeps
them in its own `figures/`. A claim that ran and read or compared something has a figure; every
other PNG there (a claim renamed, removed or not run) is deleted by the same command.

What: panel 1, "what was read" (`Outcome.read`): each arm's metric over its seeds as points with
a short bar at their mean; when a sweep's trials vary over another value than `seed`, the
seed-mean curve over that value with each seed's point (a log x axis when its positive values
span more than 10x), and a plain run's value as a horizontal line. Panel 2, "what was tested"
(`Outcome.tested`): each quantity the check compared with a number (written in the check, or
computed: `0.8 * mean(...)`), as a point (an interval as an error bar, an open one as an arrow
head at its end), coloured by the comparison's value (green true, red false, grey undecided), with
the threshold as a dashed line and `op threshold` in its label. An empty panel is
left out. The title is the claim's name and its result.

Deterministic: matplotlib's Agg backend through a bare Figure (no pyplot state), a fixed size and
dpi, and no `Software` entry in the PNG, so the same outcomes give the same bytes on one machine.
matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from framework.claims.evidence import Interval
from framework.claims.outcome import Outcome, Series, Tested

SIZE_INCHES, DPI = (6.4, 3.2), 80
LOG_SPAN = 10.0  # as `exp compare --plot`: a log x axis when positive values span more than this
HOLDS_COLOUR = {True: "tab:green", False: "tab:red", None: "tab:gray"}
LABEL_CHARS = 34  # a tick label longer than this is shortened with "..."
MAX_TESTED = 5  # comparisons drawn, one narrow panel each
MAX_ARM_TICKS = 3  # more arms than this (or long names) are numbered, their names in a legend below


def figure_dir(folder: str | Path) -> Path:
    """Where a paper folder's claim figures go: `<root>/docs/claims/<paper>/` for `<root>/specs/<paper>/`,
    else `<folder>/figures/`."""
    folder = Path(folder).resolve()
    if folder.parent.name == "specs":
        return folder.parent.parent / "docs" / "claims" / folder.name
    return folder / "figures"


def has_figure(outcome: Outcome) -> bool:
    """Whether a claim gets a figure: it ran and its check read or compared something."""
    return outcome.ran and bool(outcome.read or outcome.tested)


def figure_links(folder: str | Path, outcomes: list[Outcome]) -> str:
    """The line under the README's table linking each claim's figure (relative to the README), or ""."""
    where = figure_dir(folder)
    links = [f"[{o.claim.name}]({Path(os.path.relpath(where / f'{o.claim.name}.png', Path(folder).resolve())).as_posix()})"
             for o in outcomes if has_figure(o)]
    if not links:
        return ""
    return "Figures (what each check read; what it compared, threshold dashed): " + " · ".join(links)


def write_figures(folder: str | Path, outcomes: list[Outcome]) -> list[Path]:
    """Draw each claim's figure into `figure_dir(folder)` and delete the other PNGs there; the paths written."""
    where = figure_dir(folder)
    written = []
    for outcome in outcomes:
        if has_figure(outcome):
            written.append(draw(outcome, where / f"{outcome.claim.name}.png"))
    for stale in sorted(where.glob("*.png")) if where.is_dir() else []:
        if stale not in written:
            stale.unlink()
    return written


def result_word(outcome: Outcome) -> str:
    """The result in the title: `pass`, `FAIL`, `inconclusive`, `NOT REPRODUCED`, ... (the status
    before its reason)."""
    return outcome.status.split(":", 1)[0]


def draw(outcome: Outcome, path: Path) -> Path:
    """One claim's figure at `path` (PNG, SIZE_INCHES at DPI): the panel of what was read (when it
    read a series), then one narrow panel per comparison, each on its own scale (a margin of 0.02
    and a loss of 3 side by side would hide the margin), at most MAX_TESTED."""
    from matplotlib.figure import Figure

    tested = outcome.tested[:MAX_TESTED]
    read = 1 if outcome.read else 0  # panels of what was read
    figure = Figure(figsize=SIZE_INCHES, dpi=DPI, layout="constrained")
    ratios = [max(2.0, 0.75 * len(tested))] * read + [1.0] * len(tested)
    axes = list(figure.subplots(1, len(ratios), squeeze=False, width_ratios=ratios)[0])
    if read:
        _draw_read(axes[0], outcome)
    for i, (panel, test) in enumerate(zip(axes[read:], tested)):
        more = len(outcome.tested) - MAX_TESTED if i == len(tested) - 1 and len(outcome.tested) > MAX_TESTED else 0
        _draw_tested(panel, test, "what was tested" if i == 0 else "", more)
    for panel in axes:
        panel.tick_params(labelsize=7)
        panel.grid(True, alpha=0.3)
        if panel.get_legend_handles_labels()[0] and panel.get_legend() is None:
            panel.legend(fontsize=6, loc="best")
    figure.suptitle(f"{outcome.claim.name}: {result_word(outcome)}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
    return path


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _metric(label: str) -> str:
    """`alias[metric]` -> metric (the label itself when it has no brackets)."""
    return label.split("[", 1)[1][:-1] if "[" in label and label.endswith("]") else label


def _alias(label: str) -> str:
    return label.split("[", 1)[0] if "[" in label else label


def swept_axes(series: Series) -> list[str]:
    """The values other than `seed` that vary over a series' trials, in the first trial's order."""
    keys = list(dict.fromkeys(k for values, _ in series for k in values if k != "seed"))
    return [k for k in keys if len({repr(values.get(k)) for values, _ in series}) > 1]


def _draw_read(panel: Any, outcome: Outcome) -> None:
    read = {label: [(v, y) for v, y in series if _finite(y)] for label, series in outcome.read.items()}
    read = {label: series for label, series in read.items() if series}
    metrics = list(dict.fromkeys(_metric(label) for label in read))
    panel.set_title("what was read", fontsize=8)
    panel.set_ylabel(_short(metrics[0]) if len(metrics) == 1 else "value", fontsize=7)
    if any(swept_axes(series) for series in read.values()):
        _curves(panel, read, len(metrics) == 1)
    else:
        _arms(panel, read, len(metrics) == 1)


def _arms(panel: Any, read: dict[str, Series], one_metric: bool) -> None:
    """Each series at its own x: its seeds' points, a short bar at their mean."""
    names = [_alias(label) if one_metric else label for label in read]
    crowded = len(names) > MAX_ARM_TICKS or sum(len(n) for n in names) > 40  # names in a legend below
    for i, (name, series) in enumerate(zip(names, read.values())):
        ys = [y for _, y in series]
        xs = [i + (j - (len(ys) - 1) / 2) * min(0.08, 0.5 / len(ys)) for j in range(len(ys))]
        panel.scatter(xs, ys, s=14, color=f"C{i % 10}", zorder=3, label=f"{i + 1}: {_short(name, 44)}" if crowded else None)
        panel.hlines(sum(ys) / len(ys), i - 0.3, i + 0.3, color=f"C{i % 10}", linewidth=2)
    ticks = [str(i + 1) for i in range(len(names))] if crowded else [_short(n, 20) for n in names]
    panel.set_xticks(range(len(names)), ticks)
    panel.set_xlim(-0.6, len(names) - 0.4)
    if crowded:
        panel.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1, frameon=False)


def _curves(panel: Any, read: dict[str, Series], one_metric: bool) -> None:
    """A sweep's seed-mean curve over its first swept value (one curve per setting of the others),
    each seed's point; a series without a swept value as a horizontal line at its mean."""
    xs_all = [values[swept_axes(s)[0]] for s in read.values() if swept_axes(s) for values, _ in s]
    numeric = all(_finite(x) for x in xs_all)
    firsts: dict[str, Any] = {}
    for x in xs_all:  # a swept value may be a list: placed by its text
        firsts.setdefault(repr(x), x)
    order = {text: float(x) if numeric else float(i) for i, (text, x) in enumerate(firsts.items())}
    colour = 0
    for label, series in read.items():
        name = _alias(label) if one_metric else label
        axes = swept_axes(series)
        if not axes:
            ys = [y for _, y in series]
            panel.axhline(sum(ys) / len(ys), color=f"C{colour % 10}", linestyle="-.", label=_short(name, 28))
            colour += 1
            continue
        groups: dict[str, list[tuple[float, float]]] = {}
        for values, y in series:
            rest = ", ".join(f"{k}={values.get(k)}" for k in axes[1:])
            groups.setdefault(rest, []).append((order[repr(values[axes[0]])], y))
        for rest, points in groups.items():
            _curve(panel, points, f"C{colour % 10}", _short(f"{name} {rest}".strip(), 28))
            colour += 1
    xlabel = ", ".join(dict.fromkeys(swept_axes(s)[0] for s in read.values() if swept_axes(s)))
    panel.set_xlabel(_short(xlabel), fontsize=7)
    if numeric and min(order.values()) > 0 and max(order.values()) / min(order.values()) > LOG_SPAN:
        panel.set_xscale("log")
    elif not numeric:
        panel.set_xticks(list(order.values()), [_short(k.strip("'"), 12) for k in order], rotation=20)


def _curve(panel: Any, points: list[tuple[float, float]], colour: str, label: str) -> None:
    by_x: dict[float, list[float]] = {}
    for x, y in points:
        by_x.setdefault(x, []).append(y)
    xs = sorted(by_x)
    panel.plot(xs, [sum(by_x[x]) / len(by_x[x]) for x in xs], marker="o", markersize=3, color=colour, label=label)
    panel.scatter([x for x, _ in points], [y for _, y in points], s=8, color=colour, alpha=0.45, zorder=3)


def _draw_tested(panel: Any, test: Tested, title: str, more: int) -> None:
    """One compared quantity, its threshold as a dashed line; below it the comparison's text."""
    import textwrap

    panel.set_title(title or (f"+{more} more not drawn" if more else ""), fontsize=8, loc="left")
    _quantity(panel, test)
    panel.axhline(test.threshold, color="black", linestyle="dashed", linewidth=1)
    lines = textwrap.wrap(_short(test.quantity, 54), 18)[:3]
    if test.threshold_text:  # computed: its text, then its value
        lines += [f"{test.op} {_short(test.threshold_text, 16)}", f"= {test.threshold:.4g}"]
    else:
        lines.append(f"{test.op} {test.threshold:.4g}")
    panel.set_xticks([0], ["\n".join(lines)], fontsize=6)
    panel.set_xlim(-1, 1)


def _quantity(panel: Any, test: Tested) -> None:
    colour = HOLDS_COLOUR[test.holds]
    if not isinstance(test.value, Interval):
        panel.scatter([0], [test.value], s=24, color=colour, zorder=3)
        return
    low, high = test.value.low, test.value.high
    if math.isfinite(low) and math.isfinite(high):
        panel.errorbar([0], [(low + high) / 2], yerr=[[(high - low) / 2], [(high - low) / 2]], fmt="none",
                       ecolor=colour, elinewidth=2, capsize=4, zorder=3)
    elif math.isfinite(low):  # open above: `>= low`
        panel.scatter([0], [low], marker="^", s=30, color=colour, zorder=3)
    elif math.isfinite(high):
        panel.scatter([0], [high], marker="v", s=30, color=colour, zorder=3)
