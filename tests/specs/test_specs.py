"""Every spec under specs/ validates; every fragment is used; every tiny spec runs end to end."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.claims import load_claims
from framework.discovery import spec_files
from framework.loader import load_spec
from framework.runner import run
from framework.schema import CommittedSchemas
from framework.plan import expand_sweep, validate_plan

SPECS = Path(__file__).resolve().parents[2] / "specs"
ALL = spec_files([SPECS], claims=False)
CLAIMS = sorted(SPECS.rglob("claims.yaml"))
FRAGMENTS = sorted(SPECS.rglob("_*.yaml"))
TINY = [p for p in ALL if p.name.startswith("tiny")]
# A few optimizer steps and one batch of each evaluation split: the whole path, quickly.
SHORT = ["trainer.max_epochs=1", "trainer.limit_train_batches=3", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1",
         "trainer.log_every_n_steps=1"]


def _id(path: Path) -> str:
    return str(path.relative_to(SPECS))


def test_specs_exist() -> None:
    assert ALL, f"no specs found under {SPECS}"
    assert TINY, "no tiny specs found"


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_spec_validates(path: Path) -> None:
    loaded = load_spec(path)
    for unit in validate_plan(loaded, CommittedSchemas()):
        assert unit.operative["paper"] == path.parent.name, "a spec's paper is its folder's slug"
    for trial in expand_sweep(loaded):  # every trial of a sweep is a valid spec too
        validate_plan(load_spec(path, trial.overrides), CommittedSchemas())


@pytest.mark.parametrize("path", CLAIMS, ids=_id)
def test_claims_file_validates(path: Path) -> None:
    claims, _ = load_claims(path.parent)
    assert claims.claims


@pytest.mark.parametrize("path", FRAGMENTS, ids=_id)
def test_fragment_is_extended(path: Path) -> None:
    users = [p for p in ALL if path.name in str(load_file_extends(p))]
    assert users, f"{_id(path)} is extended by no spec"


def load_file_extends(path: Path) -> list[str]:
    import yaml

    extends = yaml.safe_load(path.read_text()).get("extends") or []
    return [extends] if isinstance(extends, str) else extends


@pytest.mark.parametrize("path", TINY, ids=_id)
def test_tiny_spec_runs(path: Path, tracked: str, upstream_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(upstream_cache))
    result = run(path, SHORT)
    assert MlflowClient(tracked).get_run(result.run_id).info.status == "FINISHED"
    assert result.metrics and all(math.isfinite(v) for v in result.metrics.values())


def test_specs_folders_have_readmes() -> None:
    for folder in {p.parent for p in ALL}:
        assert (folder / "README.md").is_file(), f"{folder} has no README.md"


def test_adult_runs_or_names_the_missing_files(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paper-scale data: read from local files when present (CI installs them), else a clear error."""
    spec = SPECS / "cvm_fairness/adult.yaml"
    short = [*SHORT, "scheduler.warmup_steps=1"]  # the spec's 100 warmup steps exceed 3 steps
    result = run(spec, short)
    assert result.metrics["test/accuracy"] > 0.5
    monkeypatch.delenv("EXPSPEC_ADULT_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="UCI Adult files not found .* Nothing is downloaded."):
        run(spec, [*short, f"data.root={tmp_path}"])
