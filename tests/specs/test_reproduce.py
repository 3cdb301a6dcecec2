"""Every paper's claims, checked in CI on its recorded results (specs/<paper>/results.lock.yaml,
framework.claims.record): `exp reproduce specs/<paper>/` evaluates the claims on the record (a run
whose spec changed since the recording runs in full, in a throwaway store), and re-runs one
recorded run from scratch, one of the headline's arms, drawn from the commit hash (or
$EXPSPEC_SAMPLE_SEED), requiring the recorded numbers. Every headline and supporting claim holds,
every control makes its check false, and the README's generated table is what the run printed
(with the line linking the claims' figures).
`pytest --verify-all -m verify_all` re-runs every recorded run instead (about the old CI's 20
minutes of claims on 2 cores): before recording, before a release. Slow: see README."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.claims import readme_block, readme_table, reproduce, table_differences
from framework.discovery import RECORD_FILE

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
PAPERS = sorted(p.parent for p in SPECS.glob("*/claims.yaml"))


def test_every_paper_states_claims() -> None:
    folders = sorted(p for p in SPECS.iterdir() if p.is_dir())
    assert folders and folders == PAPERS, f"paper folders without claims.yaml: {sorted(set(folders) - set(PAPERS))}"


def _check(folder: Path, verify: int, verify_all: bool) -> None:
    relative = folder.relative_to(ROOT)
    # Under pytest-xdist the other worker already uses the second core: sweeps run one trial at a time.
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    # EXPSPEC_CLAIMS_ISOLATE=process runs a sweep's trials the way every sweep ran before warm workers.
    isolate = os.environ.get("EXPSPEC_CLAIMS_ISOLATE", "fork")
    outcomes = reproduce(relative, jobs=jobs, echo=lambda *_: None, isolate=isolate, verify=verify,
                         verify_all=verify_all, sample_seed=os.environ.get("EXPSPEC_SAMPLE_SEED"))
    failed = [f"{o.claim.name}: {o.status}; {o.numbers} {o.error}" for o in outcomes if o.failed]
    assert not failed, "\n".join(failed)
    controls = [f"{o.claim.name} {o.control_error}".rstrip() for o in outcomes
                if o.ran and (o.control_passed is not False or o.control_error)]
    assert not controls, f"claims whose negative control does not make the check false: {controls}"
    written = readme_table(folder / "README.md")
    assert written is not None, f"{folder / 'README.md'} has no generated claims table"
    differences = table_differences(written, readme_block(relative, outcomes))
    assert not differences, "README table differs from this run (rerun `exp reproduce --write-readme`):\n" + "\n".join(differences)


@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_every_paper_has_recorded_results(folder: Path) -> None:
    assert (folder / RECORD_FILE).is_file(), (
        f"{folder.relative_to(ROOT)} has no {RECORD_FILE}: `exp reproduce {folder.relative_to(ROOT)}/ --record`")


@pytest.mark.slow
@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_claims_hold(folder: Path, tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the report names the folder as `exp reproduce specs/<paper>` does
    _check(folder, verify=1, verify_all=False)


@pytest.mark.slow
@pytest.mark.verify_all
@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_claims_hold_on_every_run_made_again(folder: Path, tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    _check(folder, verify=0, verify_all=True)
