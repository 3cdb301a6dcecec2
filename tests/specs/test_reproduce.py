"""Every paper's claims, checked in full: `exp reproduce specs/<paper>/` runs its tiny specs to the
end (fresh, in a throwaway store) and every claim must hold. Slow: see README for the timing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.claims import reproduce

SPECS = Path(__file__).resolve().parents[2] / "specs"
PAPERS = sorted(p.parent for p in SPECS.glob("*/claims.yaml"))


def test_every_paper_states_claims() -> None:
    folders = sorted(p for p in SPECS.iterdir() if p.is_dir())
    assert folders and folders == PAPERS, f"paper folders without claims.yaml: {sorted(set(folders) - set(PAPERS))}"


@pytest.mark.slow
@pytest.mark.parametrize("folder", PAPERS, ids=lambda p: p.name)
def test_claims_hold(folder: Path, tracked: str) -> None:
    # Under pytest-xdist the other worker already uses the second core: sweeps run one trial at a time.
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    outcomes = reproduce(folder, fresh=True, jobs=jobs, echo=lambda *_: None)
    failed = [f"{o.claim.name}: {o.numbers} {o.error}" for o in outcomes if o.failed]
    assert not failed, "\n".join(failed)
