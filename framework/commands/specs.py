"""`exp validate` and `exp show`: the commands that read specs (no torch)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from framework.commands import EXIT_SPEC
from framework.discovery import spec_files
from framework.spec_check import check_files


def _validate_results(files: list[Path], use_cache: bool) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Each file's (error text or None, problems as `--format json` writes them): results from the
    validate cache whose inputs did not change (framework/validate_cache.py), the rest checked
    (`check_files`) and written to it."""
    from framework.invocation import current
    from framework.validate_cache import ValidateCache

    validate_cache = ValidateCache(current().cache_dir / "validate") if use_cache else None
    cached = [validate_cache.get(path) if validate_cache else None for path in files]
    checked = iter(check_files([path for path, hit in zip(files, cached) if hit is None], validate_cache))
    results = []
    for hit in cached:
        if hit is None:
            error = next(checked)
            hit = {"text": None if error is None else str(error),
                   "problems": [] if error is None else [p.to_json() for p in error.problems]}
        results.append((hit["text"], hit["problems"]))
    return results


def cmd_validate(args: argparse.Namespace) -> int:
    files = spec_files(args.paths)
    if not files:
        print(f"error: no spec files found in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_SPEC
    failed, report = 0, []
    as_json = args.format == "json"
    use_cache = not args.no_cache and os.environ.get("EXPSPEC_VALIDATE_CACHE", "1") != "0"
    for path, (text, problems) in zip(files, _validate_results(files, use_cache)):
        if text is not None:
            failed += 1
            if not as_json:
                print(text, file=sys.stderr)
        if as_json:
            report.append({"file": str(path), "valid": text is None, "problems": problems})
        elif text is None and not args.quiet:
            print(f"ok  {path}")
    if as_json:
        import json

        print(json.dumps({"valid": len(files) - failed, "total": len(files), "files": report}, indent=1))
    else:
        print(f"{len(files) - failed} of {len(files)} spec(s) valid", file=sys.stderr if failed else sys.stdout)
    return EXIT_SPEC if failed else 0


def cmd_show(args: argparse.Namespace) -> int:
    from framework.loader import load_spec
    from framework.plan import expand_sweep, validate_plan
    from framework.schema import CommittedSchemas

    loaded = load_spec(args.spec, args.overrides)
    units = validate_plan(loaded, CommittedSchemas())
    for i, unit in enumerate(units):
        if i:
            print("---")
        stage = f", stage '{unit.stage}'" if unit.stage else ""
        if args.sources:  # where each value comes from (framework/provenance.py)
            from framework.provenance import sources_table

            print(f"# operative spec of {args.spec}{stage}: each value and where it comes from")
            print("\n".join(sources_table(unit.loaded, unit.operative)))
            continue
        print(f"# operative spec of {args.spec}{stage}")
        print(yaml.safe_dump(unit.operative, sort_keys=False, default_flow_style=None, width=100), end="")
    trials = expand_sweep(loaded)
    search = (loaded.data.get("sweep") or {}).get("optuna") if isinstance(loaded.data, dict) else None
    if trials and isinstance(search, dict):  # drawn as they run: only the two ends were validated
        print(f"# sweep: an optuna search of {search.get('trials')} trial(s), drawn as they run; the ends of its "
              "ranges: " + "; ".join(t.name for t in trials))
    elif trials:
        print(f"# sweep: {len(trials)} trial(s): " + "; ".join(t.name for t in trials))
    return 0
