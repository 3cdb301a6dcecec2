"""framework/claims/: the check language, claims files, tiers, and `exp reproduce` end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from framework.claims import Claim, evaluate, load_claims, parse_check, reproduce
from framework.cli import main
from framework.errors import SpecError
from framework.runner import RunResult

ROOT = Path(__file__).resolve().parents[2]
RESULTS = {
    "a": RunResult("1", {"test/acc": 0.9, "test/gap": 0.2}),
    "b": RunResult("2", {"test/acc": 0.95, "test/gap": 0.4}),
}


def _trials(values: list[float], gaps: list[float]) -> list[RunResult]:
    trials = []
    for v, g in zip(values, gaps):
        trial = RunResult(None, {"test/gap": g})
        trial.values = {"w": v}  # type: ignore[attr-defined]
        trials.append(trial)
    return trials


@pytest.mark.parametrize(
    "check, passed",
    [
        ("a['test/gap'] <= 0.5 * b['test/gap']", True),
        ("a['test/gap'] <= 0.4 * b['test/gap']", False),
        ("a['test/acc'] >= 0.75 and b['test/acc'] - a['test/acc'] <= 0.1", True),
        ("not a['test/acc'] > 0.95", True),
        ("0.1 < a['test/gap'] < 0.3", True),
        ("abs(a['test/acc'] - b['test/acc']) < 0.01", False),
        ("non_increasing(column(s, 'test/gap'), 0.0)", True),
        ("loglog_slope(param(s, 'w'), column(s, 'test/gap')) < -0.9", True),
        ("r2(param(s, 'w'), column(s, 'test/gap')) > 0.99", False),
        ("max(column(s, 'test/gap')) == column(s, 'test/gap')[0]", True),
    ],
)
def test_checks(check: str, passed: bool) -> None:
    results = {**RESULTS, "s": _trials([1.0, 2.0, 4.0], [0.4, 0.2, 0.1])}
    outcome = evaluate(Claim(name="c", text="t", check=check), results)
    assert outcome.error == ""
    assert outcome.passed is passed


@pytest.mark.parametrize(
    "check, message",
    [
        ("a.metrics", "'a.metrics' is not allowed in a check (Attribute)"),
        ("__import__('os')", "unknown function call '__import__('os')'. Functions: abs, min, max, mean, log, sqrt, "
                             "len, data_constrained_r2, loglog_slope, non_decreasing, non_increasing, r2, slope, column, param"),
        ("aa['test/acc'] > 0", "unknown run 'aa'. Did you mean 'a'?"),
        ("a['test/acc'] > > 1", "invalid check syntax at column 17: invalid syntax"),
        ("[x for x in a]", "'[x for x in a]' is not allowed in a check (ListComp)"),
    ],
)
def test_checks_that_are_rejected(check: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_check(check, {"a", "b"})
    assert str(info.value) == message


def test_missing_metric_is_a_failed_claim_with_a_hint() -> None:
    outcome = evaluate(Claim(name="c", text="t", check="a['test/accuracy'] > 0"), RESULTS)
    assert not outcome.passed
    assert outcome.error == "ValueError: run 'a' has no metric 'test/accuracy'. Did you mean 'test/acc'?"


def _folder(tmp_path: Path, check: str, runs: str = "", claims: str = "") -> Path:
    """A paper folder with one tiny spec, run `t` and claim `learns`; `runs` and `claims` are more
    YAML lines for the two lists."""
    folder = tmp_path / "demo_paper"
    folder.mkdir()
    (folder / "tiny.yaml").write_text(
        f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: demo\npaper: demo_paper\n"
        "trainer: {max_steps: 20, limit_val_batches: 1}\n")
    (folder / "claims.yaml").write_text(
        f"paper: demo_paper\nruns:\n  t: {{spec: tiny.yaml}}\n{runs}claims:\n"
        f"  - name: learns\n    text: it learns\n    check: {check}\n{claims}")
    (folder / "README.md").write_text("# demo\n\n<!-- claims:begin -->\nold\n<!-- claims:end -->\n\nafter\n")
    return folder


def test_reproduce_passes_logs_and_rewrites_readme(tracked: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, "t['test/accuracy'] > 0.6")
    assert main(["reproduce", str(folder), "--write-readme"]) == 0
    readme = (folder / "README.md").read_text()
    assert "| **learns**: it learns | t[test/accuracy] = " in readme and "| pass |" in readme
    assert "old" not in readme and readme.endswith("<!-- claims:end -->\n\nafter\n")
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("demo_paper")
    logged = client.search_runs([experiment.experiment_id], "tags.`expspec.reproduce` = 'true'")
    assert logged[0].data.metrics["claim/learns"] == 1.0 and logged[0].info.status == "FINISHED"


def test_reproduce_exits_nonzero_when_a_claim_fails(tracked: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, "t['test/accuracy'] > 0.9999")
    outcomes = reproduce(folder, echo=lambda *_: None)
    assert [o.passed for o in outcomes] == [False]
    assert main(["reproduce", str(folder)]) == 1


def test_claims_file_errors(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "u['test/accuracy'] > 0")
    text = (folder / "claims.yaml").read_text().replace("tiny.yaml}", "tiny2.yaml}")
    (folder / "claims.yaml").write_text(text)
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    messages = [p.message for p in info.value.problems]
    assert messages == [f"spec file not found: {folder / 'tiny2.yaml'}", "unknown run 'u'. Runs: t."]


FULL_RUN = "  big: {spec: tiny.yaml, overrides: [name=demo_big, 'trainer.max_steps=30'], tier: full}\n"
FULL_CLAIM = "  - name: learns_longer\n    text: a longer run learns too\n    check: big['test/accuracy'] > 0.6\n"


def test_default_tier_leaves_full_runs_and_claims_out(tracked: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, "t['test/accuracy'] > 0.6", FULL_RUN, FULL_CLAIM + "    tier: full\n")
    printed: list[str] = []
    outcomes = reproduce(folder, echo=printed.append)
    assert [(o.claim.name, o.ran, o.passed, o.failed) for o in outcomes] == [
        ("learns", True, True, False), ("learns_longer", False, False, False)]
    text = "\n".join(printed)
    assert f"`exp reproduce {folder}` (default tier):" in text
    assert "| **learns_longer** (full tier): a longer run learns too |  | full tier, not run |" in text
    assert "1 of 1 claim(s) hold; 1 full-tier claim(s) not run (`--full` runs them)" in text
    assert "== big" not in text
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("demo_paper").experiment_id
    assert not client.search_runs([experiment], "tags.`mlflow.runName` = 'demo_big'")
    logged = client.search_runs([experiment], "tags.`expspec.tier` = 'default'")
    assert list(logged[0].data.metrics) == ["claim/learns"] and logged[0].info.status == "FINISHED"

    assert main(["reproduce", str(folder), "--full"]) == 0
    assert len(client.search_runs([experiment], "tags.`mlflow.runName` = 'demo_big'")) == 1
    logged = client.search_runs([experiment], "tags.`expspec.tier` = 'full'")
    assert sorted(logged[0].data.metrics) == ["claim/learns", "claim/learns_longer"]


def test_a_default_claim_cannot_read_a_full_run(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "t['test/accuracy'] > 0.6", FULL_RUN, FULL_CLAIM)
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    [problem] = info.value.problems
    assert str(problem.mark) == f"{folder / 'claims.yaml'}:11:12"
    assert problem.message == (
        "claim 'learns_longer' is in the default tier but reads run 'big', which is `tier: full` (line 4); "
        "mark the claim `tier: full`, or the run `tier: default`")


def test_tier_values_are_checked(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "t['test/accuracy'] > 0.6", claims="    tier: ful\n")
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    [problem] = info.value.problems
    assert str(problem.mark) == f"{folder / 'claims.yaml'}:8:11"
    assert problem.message == "Input should be 'default' or 'full'"


def test_claim_functions_are_registered_and_family_ones_resolve() -> None:
    """Beyond the builtins, a check calls the registered claim functions: shared curve shapes and a
    family's own (sae's law), found through the registry, not a table in framework/."""
    import registry
    from framework.claims.functions import BUILTINS, FUNCTIONS

    kind = registry.KINDS["claim_functions"]
    assert kind.origin_of("slope") == "components" and kind.origin_of("data_constrained_r2") == "components.sae"
    assert list(FUNCTIONS) == [*BUILTINS, *kind.names()]
    slope, text = FUNCTIONS["slope"]
    assert slope([0, 1, 2], [1, 3, 5]) == 2.0 and text == "Least-squares slope of ys against xs."
    with pytest.raises(registry.UnknownComponent, match="unknown claim function 'slpoe'. Did you mean 'slope'?"):
        FUNCTIONS["slpoe"]
