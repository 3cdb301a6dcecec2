"""The run context a researcher reads in the MLflow UI (framework/run_context.py): user and source,
installed packages, the git diff of a dirty tree, the data as a dataset input with a digest,
system metrics."""

from __future__ import annotations

import getpass
import importlib.metadata
import subprocess
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from framework.run_context import data_digest, installed_packages, installed_versions, package_version
from framework.runner import run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"


def _git(repo: Path, *argv: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=repo, check=True,
                   capture_output=True)


def test_a_run_records_who_where_what_data_and_the_machine_load(tracked: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "lab"
    repo.mkdir()
    (repo / "notes.txt").write_text("first\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-q", "-m", "notes")
    (repo / "notes.txt").write_text("first\nchanged, not committed\n")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("EXPSPEC_SYSTEM_METRICS_SECONDS", "0.2")
    result = run(TINY, ["trainer.max_steps=30"])

    client = MlflowClient(tracked)
    logged = client.get_run(result.run_id)
    tags = logged.data.tags
    assert tags["mlflow.user"] == getpass.getuser()
    assert tags["mlflow.source.name"] == str(TINY) and tags["mlflow.source.type"] == "LOCAL"
    assert tags["expspec.git_dirty"] == "true"
    assert tags["expspec.cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # AVX2 on x86 (framework.invocation.pin_cpu_numerics)
    artifacts = {a.path for a in client.list_artifacts(result.run_id)}
    assert {"environment", "git", "result", "resolved_spec.yaml"} <= artifacts
    diff = client.download_artifacts(result.run_id, "git/diff.patch", str(tmp_path))
    assert "+changed, not committed" in Path(diff).read_text()
    packages = Path(client.download_artifacts(result.run_id, "environment/packages.txt", str(tmp_path))).read_text()
    assert packages == installed_packages() and "\nmlflow==" in packages
    (dataset,) = logged.inputs.dataset_inputs
    assert (dataset.dataset.name, dataset.dataset.digest) == ("synthetic_fair_tabular", data_digest(result.operative))
    assert [(t.key, t.value) for t in dataset.tags] == [("mlflow.data.context", "train")]
    assert {"system/cpu_utilization_percentage", "system/system_memory_usage_megabytes"} <= set(logged.data.metrics)


def test_system_metrics_can_be_turned_off(tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPSPEC_SYSTEM_METRICS_SECONDS", "0")
    result = run(TINY, ["trainer.max_steps=5"])
    logged = MlflowClient(tracked).get_run(result.run_id)
    assert logged.data.tags["expspec.system_metrics"] == "off ($EXPSPEC_SYSTEM_METRICS_SECONDS=0)"
    assert not any(k.startswith("system/") for k in logged.data.metrics)


@pytest.mark.parametrize("change, same", [
    ({}, True),
    ({"name": "renamed", "trainer": {"max_steps": 1}}, True),  # not the data
    ({"seed": 1}, False),
    ({"data": {"type": "synthetic_fair_tabular", "n_samples": 10}}, False),
], ids=["identical", "other-training", "other-seed", "other-data"])
def test_the_data_digest_follows_the_data_section_and_the_seed(change: dict, same: bool) -> None:
    base = {"name": "x", "seed": 0, "data": {"type": "synthetic_fair_tabular", "n_samples": 6000},
            "trainer": {"max_steps": 300}}
    assert (data_digest({**base, **change}) == data_digest(base)) is same


def test_installed_packages_are_read_once_per_process_as_importlib_metadata_reads_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    expected: dict[str, str] = {}
    for dist in importlib.metadata.distributions():  # the full parse; the first on sys.path wins
        expected.setdefault(dist.metadata["Name"], dist.version)
    installed_versions.cache_clear()
    assert installed_versions() == expected
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: pytest.fail("listed twice"))
    assert installed_versions() == expected and installed_packages().count("\n") == len(expected)
    assert package_version("PyYAML") == package_version("pyyaml") == importlib.metadata.version("pyyaml")
    assert package_version("no-such-distribution") == "not installed"
