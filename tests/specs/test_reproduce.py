"""Every paper's claims, checked in full: `exp reproduce specs/<paper>/` runs its default tier to the
end (fresh, in a throwaway store); every headline and supporting claim holds, every control makes
its check false, and the README's generated table is what the run printed. Slow: see README."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.claims import readme_table, report, reproduce, table_differences

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
PAPERS = sorted(p.parent for p in SPECS.glob("*/claims.yaml"))


def test_every_paper_states_claims() -> None:
    folders = sorted(p for p in SPECS.iterdir() if p.is_dir())
    assert folders and folders == PAPERS, f"paper folders without claims.yaml: {sorted(set(folders) - set(PAPERS))}"


@pytest.mark.slow
@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_claims_hold(folder: Path, tracked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the report names the folder as `exp reproduce specs/<paper>` does
    relative = folder.relative_to(ROOT)
    # Under pytest-xdist the other worker already uses the second core: sweeps run one trial at a time.
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    # EXPSPEC_CLAIMS_ISOLATE=process checks the claims the way every sweep ran before warm workers
    # (a fresh interpreter per trial): how README's Tests section measures what warm workers save CI.
    isolate = os.environ.get("EXPSPEC_CLAIMS_ISOLATE", "fork")
    outcomes = reproduce(relative, fresh=True, jobs=jobs, echo=lambda *_: None, isolate=isolate)
    failed = [f"{o.claim.name}: {o.status}; {o.numbers} {o.error}" for o in outcomes if o.failed]
    assert not failed, "\n".join(failed)
    controls = [f"{o.claim.name} {o.control_error}".rstrip() for o in outcomes
                if o.ran and (o.control_passed is not False or o.control_error)]
    assert not controls, f"claims whose negative control does not make the check false: {controls}"
    written = readme_table(folder / "README.md")
    assert written is not None, f"{folder / 'README.md'} has no generated claims table"
    differences = table_differences(written, report(relative, outcomes))
    assert not differences, "README table differs from this run (rerun `exp reproduce --write-readme`):\n" + "\n".join(differences)
