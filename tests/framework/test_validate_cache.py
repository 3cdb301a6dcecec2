"""framework/validate_cache.py: `exp validate` reuses a file's result only while nothing it read,
nor the checker, changed, and a reused result reads exactly as a fresh check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from framework import cli, spec_check, validate_cache
from framework.discovery import spec_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("EXPSPEC_VALIDATE_CACHE")
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "validate"


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = cli.main(["validate", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def no_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(files: list, store: object, schemas: object) -> list:
        raise AssertionError(f"checked again: {files}")
    monkeypatch.setattr(spec_check, "check_share", refuse)


def test_every_landed_spec_reads_the_same_from_the_cache(cached: Path, capsys, monkeypatch) -> None:
    fresh = validate(capsys, "--no-cache", "specs/")
    assert not cached.exists()
    assert validate(capsys, "specs/") == fresh
    assert len(list(cached.glob("*.json"))) == fresh[1]["total"]
    no_checks(monkeypatch)
    assert validate(capsys, "specs/") == fresh


def test_a_changed_or_created_dependency_is_checked_again(cached: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    folder = tmp_path / "paper"
    folder.mkdir()
    base = (ROOT / "specs/cvm_fairness/tiny.yaml").read_text()
    child = folder / "child.yaml"
    child.write_text("extends: _base.yaml\nname: child\n")
    code, report = validate(capsys, str(child))
    assert code == 2 and "base spec '_base.yaml' not found" in report["files"][0]["problems"][0]["message"]
    (folder / "_base.yaml").write_text(base)  # the missing parent now exists
    code, report = validate(capsys, str(child))
    assert code == 0 and report["files"][0]["valid"]
    (folder / "_base.yaml").write_text(base.replace("lr: ", "lrr: ", 1))  # and is edited
    code, report = validate(capsys, str(child))
    assert code == 2 and "optimizer.lrr" in report["files"][0]["problems"][0]["key"]
    stored = report
    no_checks(monkeypatch)
    assert validate(capsys, str(child)) == (2, stored)  # nothing changed: the stored error, as is


def test_the_path_as_given_and_the_directory_are_part_of_the_key(cached: Path, capsys, monkeypatch, tmp_path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text((ROOT / "specs/cvm_fairness/tiny.yaml").read_text().replace("lr: ", "lrr: ", 1))
    _, absolute = validate(capsys, str(spec))
    monkeypatch.chdir(tmp_path)
    _, relative = validate(capsys, "s.yaml")
    assert absolute["files"][0]["problems"][0]["file"] == str(spec)
    assert relative["files"][0]["problems"][0]["file"] == "s.yaml"


def test_the_fingerprint_follows_the_checker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "framework").mkdir()
    (tmp_path / "components" / "family").mkdir(parents=True)
    (tmp_path / "framework" / "validate.py").write_text("x = 1\n")
    (tmp_path / "framework" / "spec.schema.json").write_text("{}")
    (tmp_path / "components" / "family" / "registry.py").write_text("ENTRIES = {}\n")
    (tmp_path / "components" / "family" / "schema.json").write_text("{}")
    (tmp_path / "components" / "registry.py").write_text("ENTRIES = {}\n")
    monkeypatch.setattr(validate_cache, "ROOT", tmp_path)
    seen = {validate_cache.fingerprint()}
    for name, text in (("framework/validate.py", "x = 22\n"), ("framework/spec.schema.json", '{"a": 1}'),
                       ("components/family/registry.py", "ENTRIES = {'a': {}}\n"),
                       ("components/family/schema.json", '{"b": 2}'), ("components/registry.py", "ENTRIES = {'b': {}}\n")):
        (tmp_path / name).write_text(text)
        seen.add(validate_cache.fingerprint())
    (tmp_path / "components" / "other").mkdir()
    (tmp_path / "components" / "other" / "registry.py").write_text("ENTRIES = {}\n")
    seen.add(validate_cache.fingerprint())
    assert len(seen) == 7
    assert validate_cache.fingerprint() in seen  # and it is stable while nothing changes


def test_a_damaged_entry_is_a_miss(cached: Path, capsys) -> None:
    fresh = validate(capsys, "specs/cvm_fairness/tiny.yaml")
    (entry,) = cached.glob("*.json")
    entry.write_text('{"path": "specs/cvm_fairness/tiny.yaml", "reads": ')
    assert validate(capsys, "specs/cvm_fairness/tiny.yaml") == fresh


def test_a_fully_cached_validate_imports_no_checker(cached: Path) -> None:
    env = {**os.environ, "EXPSPEC_CACHE_DIR": str(cached.parent)}
    probe = ("import sys; from framework import cli\n"
             "try:\n    cli.main(['validate', '-q', 'specs/'])\nexcept SystemExit: pass\n"
             "print(sorted(m for m in ('yaml', 'jsonschema', 'pydantic', 'registry', 'torch') if m in sys.modules))")
    first = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert first.stdout.strip().splitlines()[-1] == "['jsonschema', 'pydantic', 'registry', 'yaml']", first.stderr
    assert second.stdout.strip().splitlines()[-1] in ("[]", "['yaml']"), second.stderr


def test_a_claims_file_is_checked_again_when_a_spec_it_names_goes(cached: Path, tmp_path: Path, capsys) -> None:
    import shutil

    folder = tmp_path / "drift_sysid"
    shutil.copytree(ROOT / "specs" / "drift_sysid", folder)
    claims = str(folder / "claims.yaml")
    assert validate(capsys, claims)[0] == 0
    named = sorted(p for p in spec_files([folder], claims=False) if p.name in (folder / "claims.yaml").read_text())
    named[0].unlink()
    code, report = validate(capsys, claims)
    assert code == 2 and any(f"spec file not found: {named[0]}" in p["message"] for p in report["files"][0]["problems"])
