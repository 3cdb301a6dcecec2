"""Shared fixtures: every test that runs a spec tracks into one throwaway sqlite store.

The suite runs in parallel (`pytest -n 2`, pytest-xdist, `--dist loadgroup`): each worker has its
own session store and temporary folders. Tests that share the result cache run on one
worker (the xdist group "upstream"), so an upstream spec trains once per test session, not once
per worker, and no two processes write one cache entry at once.

torch's CPU kernels are pinned to AVX2 here, before any test module computes
(framework/invocation.py, `pin_cpu_numerics`): the claim checks run in the test process, and their
README tables are the numbers of AVX2 kernels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from framework.invocation import no_mlflow_telemetry, pin_cpu_numerics

pin_cpu_numerics()  # first: see above
no_mlflow_telemetry()  # before mlflow is imported (framework/invocation.py)

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"


@pytest.fixture(autouse=True)
def fresh_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """`exp validate` checks every file in tests: a test that changes a component table in-process
    must not be answered by a result another test cached. The validate cache itself
    (framework/validate_cache.py) is tested in tests/framework/test_validate_cache.py."""
    monkeypatch.setenv("EXPSPEC_VALIDATE_CACHE", "0")


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A sqlite MLflow store shared by the session (creating its tables takes seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def tracked(store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs in this test log to the session store; Lightning's files and the result cache go to
    tmp_path (so no test reuses another's results)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("EXPSPEC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("EXPSPEC_CACHE_DIR", str(tmp_path / "cache"))
    return store


@pytest.fixture(scope="session")
def upstream_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One result cache for spec runs that start from another spec's output (`init: {spec: ...}`,
    e.g. lotts' tiny samplers from tiny_pretrain.yaml): the upstream spec trains in full once per
    test session and is then reused by its hash, as on a user's machine. Point EXPSPEC_CACHE_DIR here."""
    return tmp_path_factory.mktemp("upstream-cache")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--verify-all", action="store_true",
                     help="also collect the tests marked verify_all: re-run every recorded claims run")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "upstream_cache" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("upstream"))
    if not config.getoption("--verify-all"):  # deselected, not skipped: they are a separate run
        kept = [item for item in items if item.get_closest_marker("verify_all") is None]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def argument_problems() -> Callable[..., dict[str, str]]:
    """`argument_problems(kind, name, **arguments)`: what `exp validate` says about each argument
    given to a registered component (key path below the node, as `hidden.1` -> message; empty when
    all are accepted). The value
    ranges of arguments live in the signatures (components/types.py), not in constructor code."""
    from framework.schema import component_schema
    from framework.arguments import argument_problem

    def problems(kind: str, name: str, **arguments: Any) -> dict[str, str]:
        properties = component_schema(kind, name)["properties"]
        found = {key: argument_problem(value, properties[key]) for key, value in arguments.items()}
        return {".".join(map(str, (key, *problem[0]))): problem[1] for key, problem in found.items() if problem}

    return problems
