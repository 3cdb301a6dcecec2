"""Which files under a specs folder are what. One list, read by `exp validate`, the editor check,
the claims tool and the tests, so that a new kind of file in a paper's folder is named once:

- specs: every `*.yaml` / `*.yml`, checked by `exp validate`;
- claims files (`claims.yaml`): checked by `exp validate` as claims (framework/claims);
- fragments (`_*.yaml`): partial specs, validated through the specs that extend them;
- recorded results (`results.lock.yaml`): written by `exp reproduce --record`, read by
  `exp reproduce`; not a spec."""
from __future__ import annotations

from pathlib import Path

CLAIMS_FILE = "claims.yaml"
RECORD_FILE = "results.lock.yaml"


def is_spec_file(path: Path, claims: bool = True) -> bool:
    """Whether `exp validate` of a folder checks `path` (a claims file only with `claims`)."""
    if path.suffix not in (".yaml", ".yml") or path.name.startswith("_") or path.name == RECORD_FILE:
        return False
    return claims or path.name != CLAIMS_FILE


def spec_files(paths: list[str | Path], claims: bool = True) -> list[Path]:
    """Files named directly, and each file under a named directory that `is_spec_file`, sorted."""
    files: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.y*ml") if is_spec_file(p, claims))
        else:
            files.append(path)
    return files
