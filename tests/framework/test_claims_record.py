"""Recorded results (framework.claims.record): `exp reproduce --record` writes what the runs
produced, `exp reproduce` checks the claims on it, and a re-run that does not give the recorded
numbers (a changed metric in the record, a code change) fails with the run, the metric, both
values and the command that re-records."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from framework.claims import reproduce
from framework.claims.record import RECORD_FILE, Recorded, RecordMismatch, compare, sample
from framework.claims.schema import VerifyRule
from framework.cli import main

ROOT = Path(__file__).resolve().parents[2]
SPECS = {
    "tiny.yaml": f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: rec\npaper: rec_paper\n"
                 "trainer: {max_steps: 10, limit_val_batches: 1}\n",
    "seeds.yaml": "extends: tiny.yaml\nname: rec_seeds\ntrainer: {max_steps: 5}\nsweep: {seeds: [0, 1, 2]}\n",
}
CLAIMS = """\
paper: rec_paper
runs:
  t: {spec: tiny.yaml}
  s: {spec: seeds.yaml}
claims:
  - name: seeds_learn
    kind: headline
    over: mean
    paper_says: the model learns
    text: every seed beats chance
    check: min(column(s, 'test/accuracy')) > 0.3
    control: {text: the one-run model in place of the seeds, replace: {s: t}}
  - name: learns
    kind: supporting
    text: it learns
    check: t['test/accuracy'] > 0.5
    control: {text: chance accuracy, numbers: {t: {test/accuracy: 0.5}}}
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "rec_paper"
    folder.mkdir()
    for name, text in SPECS.items():
        (folder / name).write_text(text)
    (folder / "claims.yaml").write_text(CLAIMS)
    return folder


@pytest.fixture
def recorded(tracked: str, tmp_path: Path) -> Path:
    folder = _folder(tmp_path)
    printed: list[str] = []
    reproduce(folder, record=True, jobs=1, echo=printed.append)
    assert any(line.startswith(f"recorded 2 run(s) in {folder / RECORD_FILE}") for line in printed), printed
    return folder


def _runs_in_store(tracked: str) -> int:
    client = MlflowClient(tracked)
    return len(client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=10_000))


def test_the_record_holds_each_run_and_trial_and_claims_are_read_from_it(recorded: Path, tracked: str) -> None:
    data = yaml.safe_load((recorded / RECORD_FILE).read_text())
    assert data["paper"] == "rec_paper" and data["packages"]["torch"].startswith("2.")
    assert set(data["runs"]) == {"t", "s"}
    assert [t["values"] for t in data["runs"]["s"]] == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    assert len({t["hash"] for t in data["runs"]["s"]}) == 3 and data["runs"]["t"]["threads"] >= 1
    assert 0 <= data["runs"]["t"]["metrics"]["test/accuracy"] <= 1 and "epoch" not in data["runs"]["t"]["metrics"]
    # the recording's runs were made in a throwaway store: the user's store got only the claims run
    before = _runs_in_store(tracked)
    printed: list[str] = []
    outcomes = reproduce(recorded, echo=printed.append)
    assert any(line.startswith("from recorded results: 2 of 2 run(s) read from") for line in printed), printed
    assert not any(line.startswith("== ") for line in printed)  # nothing ran
    assert _runs_in_store(tracked) == before + 1  # the reproduction's own claims run
    accuracy = [t["metrics"]["test/accuracy"] for t in data["runs"]["s"]]
    assert outcomes[0].passed == (min(accuracy) > 0.3) and outcomes[0].control_passed is not None
    assert outcomes[1].passed == (data["runs"]["t"]["metrics"]["test/accuracy"] > 0.5)


def test_a_sample_reruns_from_scratch_and_matches(recorded: Path) -> None:
    printed: list[str] = []
    reproduce(recorded, verify=2, sample_seed="abc", echo=printed.append)
    verified = [line for line in printed if line.startswith("verified run")]
    assert len(verified) == 2 and verified[0].startswith("verified run `s` trial")  # the headline's arm first
    assert "metric(s) as recorded" in verified[0]


def test_a_changed_metric_in_the_record_fails_with_the_run_metric_and_both_values(
        recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = recorded / RECORD_FILE
    data = yaml.safe_load(path.read_text())
    true_value = data["runs"]["t"]["metrics"]["test/loss"]
    path.write_text(path.read_text().replace(f"test/loss: {true_value!r}", "test/loss: 0.125", 1))
    with pytest.raises(RecordMismatch) as error:
        reproduce(recorded, verify_all=True, echo=lambda *_: None)
    message = str(error.value)
    assert f"{path}: run `t` no longer reproduces its recorded result" in message
    assert f"metric 'test/loss': recorded 0.125, the re-run gives {true_value!r} (must be identical)" in message
    assert f"`exp reproduce {recorded.as_posix()}/ --record`" in message
    # which other papers to check: here none (the folder is alone), named by the run's components
    assert "Other papers whose runs use its model, task, data or loss (" in message and "mlp" in message
    assert "): none; check each with `exp reproduce" in message
    assert main(["reproduce", str(recorded), "--verify-all"]) == 1
    assert "metric 'test/loss': recorded 0.125" in capsys.readouterr().err


def test_a_code_change_that_alters_a_sampled_runs_numbers_is_caught(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import framework.runner

    seed = framework.runner._seed
    monkeypatch.setattr(framework.runner, "_seed", lambda operative: seed({**operative, "seed": operative["seed"] + 1}))
    with pytest.raises(RecordMismatch, match=r"run `s` trial \d \(seed=\d\) no longer reproduces"):
        reproduce(recorded, verify=1, sample_seed="any", echo=lambda *_: None)


def test_a_changed_spec_has_no_recording_and_runs(recorded: Path) -> None:
    with open(recorded / "seeds.yaml", "a") as spec:
        spec.write("optimizer: {lr: 0.02}\n")
    printed: list[str] = []
    reproduce(recorded, echo=printed.append, jobs=1)
    assert any(line.startswith("not recorded for their current specs, so run now: s") for line in printed), printed
    assert any(line.startswith("from recorded results: 1 of 2") for line in printed)
    assert any(line.startswith("== s: sweep") for line in printed) and not any(line.startswith("== t") for line in printed)


def test_a_staged_trial_records_the_threads_its_stages_ran_with(tracked: str, tmp_path: Path) -> None:
    """A staged run's parent only opens the run (its torch_threads tag is the process default, 2 on
    a 2-core machine); its stages ran with the sweep's hardware.threads=1, and a verification
    re-runs at that count: at 2 threads cvm_fairness's HSIC stages came out other in the last bits."""
    folder = _folder(tmp_path)
    (folder / "staged.yaml").write_text(
        "extends: tiny.yaml\nname: rec_staged\ntrainer: {max_steps: 3}\nsweep: {seeds: [0]}\n"
        "stages: {first: {}, second: {init: {stage: first}}}\n")
    (folder / "claims.yaml").write_text(CLAIMS.replace("  s: {spec: seeds.yaml}\n", "  s: {spec: seeds.yaml}\n  st: {spec: staged.yaml}\n")
                                        + "  - name: staged_learns\n    kind: supporting\n    text: t\n"
                                        "    check: min(column(st, 'second:test/accuracy')) > 0.0\n"
                                        "    control: {text: zero, numbers: {st: [{second:test/accuracy: 0.0}]}}\n")
    reproduce(folder, record=True, jobs=1, echo=lambda *_: None)
    [trial] = yaml.safe_load((folder / RECORD_FILE).read_text())["runs"]["st"]
    assert trial["threads"] == 1 and "second:test/accuracy" in trial["metrics"]
    printed: list[str] = []
    reproduce(folder, verify_all=True, echo=printed.append)
    assert any(line.startswith("verified run `st` trial 0 (seed=0)") for line in printed)


def test_verify_without_a_record_is_a_usage_error(tracked: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path)
    assert main(["reproduce", str(folder), "--verify", "1"]) == 2
    assert "nothing to verify: no results recorded for the current specs" in capsys.readouterr().err


def test_the_papers_that_share_a_runs_components_are_named() -> None:
    from framework.claims.record import family_types, papers_using

    types = family_types(ROOT / "specs/lotts/tiny_seeds.yaml", [])
    assert "lotts" in types and "mlp" not in types  # model, task, data, loss; not the optimizer
    assert papers_using(types, ROOT / "specs") == ["lotts"]
    assert {"cvm_fairness", "gamma_laplace"} <= set(papers_using({"mlp"}, ROOT / "specs"))


def _rec(alias: str, index: int | None, **metrics: float) -> Recorded:
    return Recorded(alias, index, "h", metrics)


def test_compare_is_bit_identical_unless_a_rule_says_why() -> None:
    rec = _rec("a", None, **{"test/acc": 0.5, "test/ms_b4": 12.0, "test/gap": 1e-13, "test/nan": float("nan")})
    rules = [VerifyRule(metrics="test/ms_*", why="wall-clock time of the machine", compare=False),
             VerifyRule(metrics="test/gap", why="round-off of a quantity that is zero", abs=1e-10)]
    assert compare(rec, {"test/acc": 0.5, "test/ms_b4": 99.0, "test/gap": 3e-13, "test/nan": float("nan")}, rules) == []
    problems = compare(rec, {"test/acc": 0.5000000000000001, "test/gap": 1e-9, "test/nan": 1.0}, rules)
    assert problems == [
        "metric 'test/acc': recorded 0.5, the re-run gives 0.5000000000000001 (must be identical)",
        "metric 'test/gap': recorded 1e-13, the re-run gives 1e-09 (allowed: rel 0, abs 1e-10)",
        "metric 'test/nan': recorded nan, the re-run gives 1.0 (must be identical)"]
    assert compare(rec, {}, [])[0] == "metric 'test/acc': recorded 0.5, the re-run does not log it"


def test_the_sample_takes_a_headline_arm_first_and_follows_its_seed() -> None:
    runs = {"head": [_rec("head", i) for i in range(3)], "other": [_rec("other", i) for i in range(5)],
            "plain": [_rec("plain", None)]}
    for seed in ("a", "b", "c", "d"):
        picks = sample(runs, ["head"], 2, seed)
        assert picks[0].alias == "head" and len(picks) == 2 and picks[1] is not picks[0]
        assert picks == sample(runs, ["head"], 2, seed)  # the same seed, the same sample
    drawn = {tuple((p.alias, p.index) for p in sample(runs, ["head"], 2, seed)) for seed in "abcdefgh"}
    assert len(drawn) > 1  # another commit, another sample
    assert len(sample(runs, ["head"], None, "a")) == 9
