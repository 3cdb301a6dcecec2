"""Where each value of the operative spec comes from (`exp show --sources`).

The loader keeps a mark for every value written in a file or an override (framework/loader.py),
and `extends:` keeps the mark of the file that wrote the value that won. So each leaf of the
operative spec is one of:

- `file:line:col`: written there, in the spec or in a file it extends (a value that a `${...}`
  reference filled is marked where the reference is written);
- `override 'key=value'`: given on the command line;
- `default`: not written anywhere; the section's or the component's default.

A key that a `sweep:` varies is marked `swept by sweep.<part> at file:line (N values)` as well:
each trial replaces it (`exp sweep` runs them; `exp run` runs the value shown).

Leaves are scalars, lists of scalars and empty collections; a mapping or a list that holds
mappings (`metrics`, `callbacks`) is walked into. Computed only for `--sources`.
"""

from __future__ import annotations

from typing import Any, Iterator


from framework.errors import Path, format_path
from framework.marked_yaml import Loaded, dump_line


def leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(key path, value) of every leaf of an operative spec, in order."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def source_of(loaded: Loaded, path: Path) -> str:
    """Where the value at `path` was written (module docstring), or 'default'. A value inside a
    mapping or list that a reference filled whole (`source: ${data}`) has no mark of its own: it
    is marked where that reference is written."""
    mark = loaded.value_marks.get(path)
    if mark:
        return str(mark)
    for end in range(len(path) - 1, 0, -1):
        outer = loaded.value_marks.get(path[:end])
        if outer:
            inside = any(p[:end] == path[:end] and len(p) > end for p in loaded.value_marks)
            return "default" if inside else f"{outer} (through a reference)"
    return "default"


def swept_keys(loaded: Loaded) -> dict[str, str]:
    """key path -> how the spec's `sweep:` varies it ('sweep.grid at file:line (3 values)')."""
    sweep = loaded.data.get("sweep") if isinstance(loaded.data, dict) else None
    found: dict[str, str] = {}
    if not isinstance(sweep, dict):
        return found
    for part in ("grid", "zip"):
        for key, values in (sweep.get(part) or {}).items():
            mark = loaded.key_marks.get(("sweep", part, key))
            count = f" ({len(values)} values)" if isinstance(values, list) else ""
            found[key] = f"sweep.{part} at {mark}{count}" if mark else f"sweep.{part}{count}"
    random = sweep.get("random") or {}
    for key in (random.get("params") or {}) if isinstance(random, dict) else {}:
        mark = loaded.key_marks.get(("sweep", "random", "params", key))
        found[key] = f"sweep.random at {mark}" if mark else "sweep.random"
    if sweep.get("seeds"):
        mark = loaded.key_marks.get(("sweep", "seeds"))
        found["seed"] = f"sweep.seeds at {mark} ({len(sweep['seeds'])} values)" if mark else "sweep.seeds"
    return found


def _scalar(value: Any) -> str:
    text = dump_line(value)
    return text if len(text) <= 60 else text[:57] + "..."


def sources_table(loaded: Loaded, operative: dict[str, Any]) -> list[str]:
    """One line per leaf: key path, value, where it comes from (aligned columns)."""
    swept = swept_keys(loaded)
    rows = []
    for path, value in leaves({k: v for k, v in operative.items() if k != "sweep"}):
        key = format_path(path)
        where = source_of(loaded, path)
        if key in swept:
            where += f"; swept by {swept[key]}"
        rows.append((key, _scalar(value), where))
    width_key = max((len(r[0]) for r in rows), default=0)
    width_value = min(max((len(r[1]) for r in rows), default=0), 40)
    return [f"{key:{width_key}}  {value:{width_value}}  {where}" for key, value, where in rows]
