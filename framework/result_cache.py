"""The spec-hash result cache: a finished run's final weights and metrics, in
`.expspec/cache/<operative-spec hash>/` (or $EXPSPEC_CACHE_DIR), so that `init: {spec: ...}`,
`exp reproduce` and a sweep's skipped trials reuse a run instead of training it again
(framework/store.py fills it from the tracking store too)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """Final weights and metrics of finished runs, by operative-spec hash ($EXPSPEC_CACHE_DIR, or
    the command's context: framework/invocation.py)."""
    from framework.invocation import current

    return current().cache_dir



@dataclass
class RunResult:
    run_id: str | None
    metrics: dict[str, float]
    operative: dict[str, Any] = field(default_factory=dict)
    spec_hash: str = ""
    checkpoint: str | None = None  # final weights in the result cache
    stages: dict[str, "RunResult"] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "metrics": self.metrics, "spec_hash": self.spec_hash,
                "checkpoint": self.checkpoint, "stages": {k: v.to_json() for k, v in self.stages.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RunResult":
        return cls(run_id=data["run_id"], metrics=data["metrics"], spec_hash=data["spec_hash"],
                   checkpoint=data.get("checkpoint"),
                   stages={k: cls.from_json(v) for k, v in data.get("stages", {}).items()})



def cached(spec_hash_: str) -> RunResult | None:
    """The cached result of a finished run with this hash, if its weights are still there."""
    path = cache_dir() / spec_hash_ / "result.json"
    if not path.is_file():
        return None
    result = RunResult.from_json(json.loads(path.read_text()))
    if result.checkpoint and not Path(result.checkpoint).is_file():
        return None
    return result


def save_result(result: RunResult) -> None:
    """Write a finished run's result into the result cache, by operative-spec hash (framework/store.py
    writes what it fetched from the tracking store the same way)."""
    folder = cache_dir() / result.spec_hash
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps(result.to_json(), indent=1))

