"""The columns of `exp compare` and their rendering: aligned text, markdown or CSV."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from mlflow.entities import Run

# The run name is its own column; free text differs always; a spec's `sweep:` section is not
# what a run did (runs logged since these became tags have none of them).
NOISY_PARAMS = ("name", "description", "sweep")
NOISY_PREFIXES = ("tracking.", "sweep.")  # where a run was logged, not what it did
TEXT_COLUMNS = ("run", "id", "status")  # never right-aligned, even when they look like numbers
MISSING = "-"
FORMATS = ("table", "markdown", "csv")


def _is_noisy(key: str) -> bool:
    return key in NOISY_PARAMS or key.startswith(NOISY_PREFIXES)


def varied_params(runs: Sequence[Run]) -> list[str]:
    """Params whose value differs across the runs (a missing param counts as a value), sorted;
    `name`, `description`, `sweep*` and `tracking.*` are left out."""
    keys = sorted({k for r in runs for k in r.data.params if not _is_noisy(k)})
    return [k for k in keys if len({r.data.params.get(k) for r in runs}) > 1]


def all_params(runs: Sequence[Run]) -> list[str]:
    return sorted({k for r in runs for k in r.data.params})


def all_metrics(runs: Sequence[Run]) -> list[str]:
    return sorted({k for r in runs for k in r.data.metrics})


def default_metrics(runs: Sequence[Run]) -> list[str]:
    """Every `test/*` metric of the runs, else every `val/*`, else every metric, sorted."""
    keys = all_metrics(runs)
    for prefix in ("test/", "val/"):
        chosen = [k for k in keys if k.startswith(prefix)]
        if chosen:
            return chosen
    return keys


def _format_metric(value: float | None, digits: int | None) -> str:
    if value is None:
        return MISSING
    return repr(float(value)) if digits is None else f"{value:.{digits}g}"


def run_label(run: Run) -> str:
    return run.data.tags.get("mlflow.runName") or run.info.run_name or run.info.run_id[:8]


def table_rows(runs: Sequence[Run], params: Sequence[str], metrics: Sequence[str],
               digits: int | None = 4) -> tuple[list[str], list[list[str]]]:
    """Header and rows: run name, short id, status, the params' values, the metrics' last values
    (`digits` significant digits; None: full precision). A missing value is `-`."""
    header = [*TEXT_COLUMNS, *params, *metrics]
    rows = [
        [run_label(r), r.info.run_id[:8], r.info.status,
         *(r.data.params.get(p, MISSING) for p in params),
         *(_format_metric(r.data.metrics.get(m), digits) for m in metrics)]
        for r in runs
    ]
    return header, rows


def number(text: str) -> float | None:
    """The text as a float, or None when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return None


def _numeric_columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[bool]:
    numeric = []
    for i, name in enumerate(header):
        values = [row[i] for row in rows if row[i] != MISSING]
        numeric.append(name not in TEXT_COLUMNS and bool(values) and all(number(v) is not None for v in values))
    return numeric


def render(header: Sequence[str], rows: Sequence[Sequence[str]], fmt: str = "table") -> str:
    """`table`: aligned plain text; `markdown`: a GitHub table; `csv`. Numeric columns are
    right-aligned (in markdown with `---:`). The text ends with a newline."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)}; got {fmt!r}")
    if fmt == "markdown":
        header = [h.replace("|", r"\|") for h in header]
        rows = [[c.replace("|", r"\|") for c in row] for row in rows]
    numeric = _numeric_columns(header, rows)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)]
    if fmt == "markdown":
        widths = [max(w, 4) for w in widths]  # room for the `---:` rule

    def line(cells: Sequence[str]) -> list[str]:
        return [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)]

    if fmt == "table":
        rule = ["-" * w for w in widths]
        return "".join("  ".join(line(cells)).rstrip() + "\n" for cells in [header, rule, *rows])
    rule = [("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric)]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in [line(header), rule, *map(line, rows)])
