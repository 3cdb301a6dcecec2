"""A sweep's plan: its trials, each trial's spec hash and the base operative spec, every trial
validated first in one pass against the committed schema (`framework.plan.SweepChecker`; no torch
import), and how many torch threads a trial gets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from framework.errors import Problem, SpecError
from framework.loader import apply_overrides, load_spec
from framework.marked_yaml import Loaded
from framework.plan import SweepChecker, Trial, validate_plan
from framework.spec import SpecHasher


def plan_trials(spec_path: str | Path, overrides: list[str]) -> tuple[list[Trial], list[str], dict[str, Any]]:
    """Trials, their hashes, and the base operative spec; every trial validated first, in one pass
    against the committed schema (`framework.plan.SweepChecker`; no torch import). The hashes are
    the ones each trial's `exp run` computes from live signatures, as long as the committed schema
    is current (a test checks it is); an `init: {spec}` upstream is hashed once per overrides."""
    plan = SweepPlan(spec_path, overrides)
    return plan.trials, plan.hashes, plan.base


class SweepPlan:
    """A sweep's trials, their hashes and base operative spec (see `plan_trials`); `optuna`: the
    `sweep.optuna` section of a search sweep (its `trials` are then two probes, see
    `framework.plan.optuna_probes`), and `hash_of(trial)` hashes a trial drawn later."""

    def __init__(self, spec_path: str | Path, overrides: list[str]) -> None:
        from framework.schema import CommittedSchemas

        self.spec_path = spec_path
        self.checker = checker = SweepChecker(spec_path, overrides, CommittedSchemas(live_fallback=True))
        if not checker.trials:
            mark = checker.unresolved.value_mark(())
            raise SpecError([Problem(mark, ("sweep",), "this spec has no 'sweep:' section; use `exp run`")])
        self.upstreams: dict[tuple[Path, tuple[str, ...]], str] = {}
        # The checker's operative specs share their unchanged sections, which nothing changes.
        self.hasher = SpecHasher()
        self.hashes: list[str] = []
        problems = checker.check(lambda units: self.hashes.append(self.units_hash(units)))
        if problems:
            raise SpecError(problems)
        self.trials, self.base = checker.trials, checker.base[0].operative
        self.optuna: dict[str, Any] | None = checker.sweep["optuna"] if checker.sweep else None

    def units_hash(self, units: list[Any], path: str | Path | None = None) -> str:
        """The hash of a trial's units (of spec `path`, default the sweep's)."""
        from framework.runner import plan_hash

        return plan_hash(units, path or self.spec_path, self.upstream_hash, self.hasher)

    def upstream_hash(self, other: Path, init_overrides: list[str]) -> str:
        """An `init: {spec}` upstream's hash, computed once per (spec, overrides)."""
        key = (other.resolve(), tuple(init_overrides))
        if key not in self.upstreams:
            units = validate_plan(load_spec(other, init_overrides, files=self.checker.files), self.checker.schemas,
                                  self.checker.memo)
            self.upstreams[key] = self.units_hash(units, other)
        return self.upstreams[key]

    def hash_of(self, trial: Trial) -> str:
        """The spec hash of a trial (one drawn by a search); a SpecError when it is not valid."""
        return self.units_hash(self.checker.units(trial))


def sweep_hash_of(hashes: list[str]) -> str:
    """A sweep's identity: the hash of its trials' spec hashes, in order."""
    import hashlib

    return hashlib.sha256("|".join(hashes).encode()).hexdigest()[:16]


def sets_threads(overrides: list[str]) -> bool:
    """Whether these overrides set `hardware.threads` (as `hardware.threads=2` or `hardware={threads: 2}`)."""
    probe = Loaded(data={})
    try:
        apply_overrides(probe, overrides)
    except SpecError:
        return False
    hardware = probe.data.get("hardware")
    return isinstance(hardware, dict) and "threads" in hardware


def trial_threads(base: dict[str, Any], overrides: list[str], jobs: int, cores: int | None) -> int:
    """Torch threads per trial: the spec's hardware.threads capped at cores // jobs, or exactly the
    value the user's overrides give (an explicit choice wins over the tool's)."""
    if sets_threads(overrides):
        return base["hardware"]["threads"]
    return min(base["hardware"]["threads"], max(1, (cores or os.cpu_count() or 1) // max(1, jobs)))
