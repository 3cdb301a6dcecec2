"""framework/claims/: the check language, claims files (kinds, seeds, controls, tiers), the report,
and `exp reproduce` end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

import registry
from framework.claims import (
    Claim, Outcome, evaluate, load_claims, parse_check, readme_block, readme_table, reproduce, table_differences,
)
from framework.claims.report import headline, summary, table
from framework.claims.reproduction import TrialResult
from framework.cli import main
from framework.errors import SpecError
from framework.result_cache import RunResult

ROOT = Path(__file__).resolve().parents[2]
RESULTS = {
    "a": RunResult("1", {"test/acc": 0.9, "test/gap": 0.2}),
    "b": RunResult("2", {"test/acc": 0.95, "test/gap": 0.4}),
}
SWAP = {"text": "b in place of a", "replace": {"a": "b"}}


def _claim(check: str, kind: str = "supporting", control: dict[str, Any] | None = None, **more: Any) -> Claim:
    return Claim(name="c", kind=kind, text="t", check=check, control=control or SWAP, **more)


def _trials(values: list[dict[str, Any]], gaps: list[float]) -> list[TrialResult]:
    return [TrialResult(None, {"test/gap": g}, values=v) for v, g in zip(values, gaps)]


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
    results = {**RESULTS, "s": _trials([{"w": 1.0}, {"w": 2.0}, {"w": 4.0}], [0.4, 0.2, 0.1])}
    outcome = evaluate(_claim(check), results)
    assert outcome.error == ""
    assert outcome.passed is passed


@pytest.mark.parametrize(
    "check, message",
    [
        ("a.metrics", "'a.metrics' is not allowed in a check (Attribute)"),
        # builtins, then the registered claim functions (a family may add one), then the accessors
        ("__import__('os')", "unknown function call '__import__('os')'. Functions: abs, min, max, mean, log, sqrt, "
                             f"len, {', '.join(registry.KINDS['claim_functions'].names())}, "
                             "column, param, seed_mean, seed_sd, seed_param, best, margin, paired_margin"),
        ("aa['test/acc'] > 0", "unknown run 'aa'. Did you mean 'a'?"),
        ("a['test/acc'] > > 1", "invalid check syntax at column 17: invalid syntax"),
        ("[x for x in a]", "'[x for x in a]' is not allowed in a check (ListComp)"),
        # bounded work: numbers written in the check are sized when it is validated
        ("10 ** 10 ** 10 > a['test/acc']", "'10 ** 10 ** 10': 10 ** 10000000000 is too large (more than about 1.8e308)"),
        ("2.0 ** 1025 > 0", "'2.0 ** 1025': 2.0 ** 1025 is too large (more than about 1.8e308)"),
        ("max([0] * 10 ** 6) > 0", "'[0] * 10 ** 6': repeating a list of 1 1000000 times makes more than 100000 items"),
        ("a['x'] + " * 400 + "1 > 0", "a check has at most 2000 characters, this one 3605"),
        ("-" * 1000 + "1 > 0", "a check nests at most 64 levels (operators, calls, brackets)"),
    ],
)
def test_checks_that_are_rejected(check: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_check(check, {"a", "b"})
    assert str(info.value) == message


@pytest.mark.parametrize(
    "check, error",
    [
        ("a['test/acc'] ** (10 ** 9) < 1", ""),  # a number below 1: no bound needed
        ("(a['test/acc'] * 10) ** 400 > 0", "ValueError: 9.0 ** 400 is too large (more than about 1.8e308)"),
        ("len([a['test/acc']] * 200000) > 0", "ValueError: repeating a list of 1 200000 times makes more than 100000 items"),
        ("a['test/acc'] * 1e308 * 10 > 0", ""),  # float arithmetic overflows to inf, no error
    ],
)
def test_power_and_repetition_are_bounded_when_evaluated(check: str, error: str) -> None:
    """A check whose operands are metrics is sized when it runs: an error, not a hang."""
    assert evaluate(_claim(check), RESULTS).error == error


def test_missing_metric_is_a_failed_claim_with_a_hint() -> None:
    outcome = evaluate(_claim("a['test/accuracy'] > 0"), RESULTS)
    assert not outcome.passed and outcome.failed
    assert outcome.error == "ValueError: run 'a' has no metric 'test/accuracy'. Did you mean 'test/acc'?"


def test_missing_trial_metric_names_the_trial() -> None:
    results = {**RESULTS, "s": _trials([{"w": 1.0, "seed": 0}], [0.4])}
    for check in ("column(s, 'test/gaps')[0] > 0", "seed_mean(s, 'test/gaps')[0] > 0"):
        outcome = evaluate(_claim(check), results)
        assert outcome.error == "ValueError: trial w=1.0,seed=0 has no metric 'test/gaps'. Did you mean 'test/gap'?"


GRID_SEEDS = [{"w": w, "seed": s} for w in (1, 2) for s in (0, 1, 2)]  # trial order: grid, then seeds


def test_seed_accessors_group_a_grid_by_configuration() -> None:
    results = {"s": _trials(GRID_SEEDS, [0.1, 0.2, 0.3, 0.5, 0.5, 0.5])}
    outcome = evaluate(_claim("seed_param(s, 'w') == [1, 2] and seed_mean(s, 'test/gap')[0] < 0.3 "
                              "and seed_sd(s, 'test/gap')[1] == 0", control={"text": "flat", "numbers": {
                                  "s": [{"test/gap": 0.5, "values": {"w": 1}}, {"test/gap": 0.5, "values": {"w": 2}}]}}),
                       results)
    assert outcome.passed and outcome.error == ""
    assert outcome.numbers == {"s[test/gap] over seeds": ["0.2 ± 0.1 (n=3)", "0.5 ± 0 (n=3)"]}
    assert outcome.control_passed is False and not outcome.failed


@pytest.mark.parametrize(
    "kind, check, control, status, failed",
    [
        ("supporting", "a['test/gap'] < b['test/gap']", SWAP, "pass", False),
        ("supporting", "a['test/gap'] > b['test/gap']", SWAP, "FAIL", True),
        ("headline", "a['test/gap'] <= b['test/gap']", SWAP, "FAIL: its control passes too", True),
        ("supporting", "a['test/gap'] < 0.3", {"text": "no gap metric", "numbers": {"a": {"test/acc": 1.0}}},
         "FAIL: its control raises", True),
        ("deviation", "a['test/gap'] > b['test/gap']", SWAP, "NOT REPRODUCED", False),
        ("deviation", "a['test/gap'] < b['test/gap']", SWAP, "reproduced after all: promote it", False),
    ],
    ids=["pass", "fail", "control passes", "control raises", "deviation", "deviation holds"],
)
def test_status_counts_the_control(kind: str, check: str, control: dict[str, Any], status: str, failed: bool) -> None:
    outcome = evaluate(_claim(check, kind, control, over="mean" if kind == "headline" else None), RESULTS)
    assert (outcome.status, outcome.failed) == (status, failed)


def _outcome(kind: str, passed: bool, control_passed: bool = False, ran: bool = True, name: str = "c",
             **more: Any) -> Outcome:
    claim = Claim(name=name, kind=kind, text="t", check="a['x'] > 0", control=SWAP, **more)
    return Outcome(claim, passed, ran=ran, control_passed=control_passed if ran else None)


HEAD = {"kind": "headline", "over": "mean"}


@pytest.mark.parametrize(
    "outcomes, line",
    [
        ([_outcome(**HEAD, passed=True), _outcome("supporting", False)], "headline reproduced: yes"),
        ([_outcome(**HEAD, passed=False, name="h")], "headline reproduced: NO (h)"),
        ([_outcome(**HEAD, passed=True, control_passed=True, name="h")], "headline reproduced: NO (h)"),
        ([_outcome("deviation", False, name="d", headline=True, over="mean")],
         "headline reproduced: NO (d; recorded as deviation: d)"),
        ([_outcome(**HEAD, passed=False, ran=False)], "headline reproduced: not run (full tier; `--full` runs it)"),
    ],
    ids=["yes", "no", "control passes", "deviation", "not run"],
)
def test_headline_line(outcomes: list[Outcome], line: str) -> None:
    assert headline(outcomes) == line


def test_summary_and_table() -> None:
    outcomes = [_outcome(**HEAD, passed=True, name="h"), _outcome("supporting", True, control_passed=True, name="s"),
                _outcome("deviation", False, name="d"), _outcome("supporting", True, ran=False, name="f", tier="full")]
    assert summary(outcomes) == ("1 of 2 claim(s) hold; 1 deviation(s) recorded as not reproduced; "
                                 "1 full-tier claim(s) not run (`--full` runs them)")
    assert table(outcomes).splitlines() == [
        "| claim | kind | numbers | negative control | result |",
        "|---|---|---|---|---|",
        "| **h**: t | headline, mean over seeds |  | b in place of a: check false | pass |",
        "| **s**: t | supporting |  | b in place of a: check true: the claim cannot fail | FAIL: its control passes too |",
        "| **d**: t | deviation |  | b in place of a: check false | NOT REPRODUCED |",
        "| **f** (full tier): t | supporting |  | b in place of a | full tier, not run |",
    ]


@pytest.mark.parametrize(
    "fresh, differences",
    [
        ("| a | 0.7512 ± 0.012 (n=3) | pass |", []),
        ("| a | 0.7514 ± 0.012 (n=3) | pass |", []),  # 2 units of the 4th digit: a rerun's rounding
        ("| a | 0.7515 ± 0.012 (n=3) | pass |", ["line 1: README 0.7512 vs now 0.7515"]),
        ("| a | 0.7512 ± 0.014 (n=3) | pass |", []),  # a sd has 2 significant digits
        ("| a | 0.7512 ± 0.015 (n=3) | pass |", ["line 1: README ± 0.012 vs now ± 0.015"]),
        ("| a | 0.7512 ± 0.012 (n=3) | FAIL |",
         ["line 1: README '| a | 0.7512 ± 0.012 (n=3) | pass |' vs now '| a | 0.7512 ± 0.012 (n=3) | FAIL |'"]),
        ("| a | 0.7512 ± 0.012 (n=3) | pass |\nmore", ["README has 1 lines, now 2"]),
    ],
    ids=["identical", "2 units off", "3 units off", "sd 2 units off", "sd 3 units off", "text", "a line more"],
)
def test_table_differences(fresh: str, differences: list[str]) -> None:
    assert table_differences("| a | 0.7512 ± 0.012 (n=3) | pass |", fresh) == differences


def test_table_differences_read_trimmed_zeros_as_digits() -> None:
    """`.4g` prints 0.7500 as 0.75: its last digit is still the 4th significant one."""
    assert table_differences("x = 0.75", "x = 0.7612") == ["line 1: README 0.75 vs now 0.7612"]
    assert table_differences("x = 0.1", "x = 0.09999") == []


# A paper folder for load_claims and `exp reproduce`: a tiny run `t`, a 3-seed sweep `s` (5 steps a
# trial), the sweep's upstream variants, and claims given per test.
TINY = "trainer: {max_steps: 20, limit_val_batches: 1}\n"
SPECS = {
    "tiny.yaml": f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: demo\npaper: demo_paper\n{TINY}",
    "seeds.yaml": "extends: tiny.yaml\nname: demo_seeds\ntrainer: {max_steps: 5}\nsweep: {seeds: [0, 1, 2]}\n",
    "two_seeds.yaml": "extends: seeds.yaml\nsweep: {seeds: [0, 1]}\n",
    "grid.yaml": "extends: tiny.yaml\nsweep: {grid: {optimizer.lr: [0.001, 0.01, 0.1]}}\n",
    "pinned.yaml": "extends: seeds.yaml\ninit: {spec: tiny.yaml}\n",
    "follows.yaml": "extends: seeds.yaml\ninit: {spec: tiny.yaml, overrides: ['seed=${seed}']}\n",
    "follows_pinned.yaml": "extends: seeds.yaml\ninit: {spec: pinned.yaml, overrides: ['seed=${seed}']}\n",
    # follows the trial's seed another way than `seed=${seed}`: its data differ for each seed
    "follows_data_seed.yaml": "extends: seeds.yaml\ninit: {spec: tiny.yaml, overrides: ['data.seed=${seed}']}\n",
}
RUNS = "  t: {spec: tiny.yaml}\n  s: {spec: seeds.yaml}\n"
HEADLINE = """\
  - name: seeds_learn
    kind: headline
    over: mean
    paper_says: the model learns
    text: every seed beats chance
    check: seed_mean(s, 'test/accuracy')[0] > 0.3
    control: {text: chance accuracy, numbers: {s: [{test/accuracy: 0.25}]}}
"""
LEARNS = """\
  - name: learns
    kind: supporting
    text: it learns
    check: t['test/accuracy'] > 0.6
    control: {text: chance accuracy, numbers: {t: {test/accuracy: 0.5}}}
"""


def _folder(tmp_path: Path, claims: str, runs: str = RUNS) -> Path:
    folder = tmp_path / "demo_paper"
    folder.mkdir(exist_ok=True)
    for name, text in SPECS.items():
        (folder / name).write_text(text)
    (folder / "claims.yaml").write_text(f"paper: demo_paper\nruns:\n{runs}claims:\n{claims}")
    (folder / "README.md").write_text("# demo\n\n<!-- claims:begin -->\nold\n<!-- claims:end -->\n\nafter\n")
    return folder


def _headline_on(alias: str) -> str:
    """HEADLINE reading sweep `alias` instead of `s` (its check and its control)."""
    return _replace_in(_replace_in(HEADLINE, "(s,", f"({alias},"), "{s:", f"{{{alias}:")


def _replace_in(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


@pytest.mark.parametrize(
    "claims, messages",
    [
        (LEARNS, ["no claim is `kind: headline`; mark the paper's main result at tiny scale (or, when it did not "
                  "reproduce, its deviation `headline: true`)"]),
        (_replace_in(HEADLINE, "    over: mean\n", ""),
         ["headline claim 'seeds_learn' needs `over: mean` or `over: every_seed` (how it holds over >= 3 seeds)"]),
        (HEADLINE + _replace_in(LEARNS, "numbers:", "replace: {t: s}, numbers:"),
         ["a control gives either runs (`replace`, `stages`) or `numbers`"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t: {test/accuracy: 0.5}}", "replace: {}"),
         ["a control gives either runs (`replace`, `stages`) or `numbers`"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t: {test/accuracy: 0.5}}", "replace: {s: t}"),
         ["the control replaces 's', which the check does not read"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t: {test/accuracy: 0.5}}", "replace: {u: t}"),
         ["the control replaces 'u', which is not a run. Runs: big, follows_pinned, g, pinned, s, t, two"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t: {test/accuracy: 0.5}}", "replace: {t: u}"),
         ["the control uses 'u', which is not a run. Runs: big, follows_pinned, g, pinned, s, t, two"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t:", "numbers: {s:"),
         ["the control gives numbers for 's', which the check does not read"]),
        (HEADLINE + LEARNS + "    headline: true\n    over: mean\n",
         ["`headline: true` marks a deviation; a reproduced main result is `kind: headline`"]),
        (_headline_on("g"),
         ["headline claim 'seeds_learn' reads 'g' (grid.yaml), which is not a sweep over >= 3 seeds "
          "(sweep.seeds: none)"]),
        (_headline_on("two"),
         ["headline claim 'seeds_learn' reads 'two' (two_seeds.yaml), which is not a sweep over >= 3 seeds "
          "(sweep.seeds: [0, 1])"]),
        (_replace_in(_headline_on("t"), "seed_mean(t, 'test/accuracy')[0]", "t['test/accuracy']"),
         ["headline claim 'seeds_learn' reads 't' (tiny.yaml), which is not a sweep over >= 3 seeds "
          "(sweep.seeds: none)"]),
        (_headline_on("pinned"),
         ["headline claim 'seeds_learn' reads 'pinned' (pinned.yaml), whose upstream tiny.yaml keeps one seed; "
          "let it follow the trial's: init: {spec: ..., overrides: ['seed=${seed}']}"]),
        (_headline_on("follows_pinned"),
         ["headline claim 'seeds_learn' reads 'follows_pinned' (follows_pinned.yaml), whose upstream tiny.yaml "
          "keeps one seed; let it follow the trial's: init: {spec: ..., overrides: ['seed=${seed}']}"]),
        (HEADLINE + _replace_in(LEARNS, "numbers: {t: {test/accuracy: 0.5}}", "replace: {t: big}"),
         ["claim 'learns' is in the default tier but its control uses run 'big', which is `tier: full`"]),
    ],
    ids=["no headline", "headline without over", "replace and numbers", "neither", "replace unread alias",
         "replace unknown alias", "replace with unknown alias", "numbers unread alias", "headline on supporting",
         "headline on a grid", "headline on 2 seeds", "headline on one run", "upstream pins its seed",
         "upstream's upstream pins its seed", "control from the full tier"],
)
def test_claims_file_rules(tmp_path: Path, claims: str, messages: list[str]) -> None:
    runs = RUNS + ("  g: {spec: grid.yaml}\n  two: {spec: two_seeds.yaml}\n  pinned: {spec: pinned.yaml}\n"
                   "  follows_pinned: {spec: follows_pinned.yaml}\n  big: {spec: tiny.yaml, tier: full}\n")
    with pytest.raises(SpecError) as info:
        load_claims(_folder(tmp_path, claims, runs))
    assert [p.message for p in info.value.problems] == messages


@pytest.mark.parametrize("upstream", ["follows.yaml", "follows_data_seed.yaml"])
def test_a_headline_over_seeds_whose_upstream_follows_the_seed_loads(tmp_path: Path, upstream: str) -> None:
    claims, _ = load_claims(_folder(tmp_path, _headline_on("f"),
                                    RUNS + f"  f: {{spec: {upstream}}}\n"))
    assert [(c.name, c.kind, c.over, c.is_headline) for c in claims.claims] == [("seeds_learn", "headline", "mean", True)]


def test_claims_file_errors(tmp_path: Path) -> None:
    folder = _folder(tmp_path, _replace_in(HEADLINE, "seed_mean(s,", "seed_mean(u,"), RUNS.replace("tiny.yaml}", "tiny2.yaml}"))
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    messages = [p.message for p in info.value.problems]
    assert messages == [f"spec file not found: {folder / 'tiny2.yaml'}", "unknown run 'u'. Runs: s, t."]


def test_claims_need_a_kind_and_a_control(tmp_path: Path) -> None:
    claims = "  - name: learns\n    text: it learns\n    check: t['test/accuracy'] > 0.6\n"
    with pytest.raises(SpecError) as info:
        load_claims(_folder(tmp_path, claims))
    assert [(p.path, p.message) for p in info.value.problems] == [
        (("claims", 0, "kind"), "Field required"), (("claims", 0, "control"), "Field required")]


# The default tier runs `t` (in process, 20 steps); the headline reads the 3-seed sweep, full tier.
FULL_RUNS = "  t: {spec: tiny.yaml}\n  s: {spec: seeds.yaml, tier: full}\n"
FULL_HEADLINE = HEADLINE + "    tier: full\n"


def _first_report_line(printed: list[str]) -> str:
    """What `exp reproduce` prints first once the runs are obtained (the lines before are theirs),
    right before the report."""
    [report] = [i for i, line in enumerate(printed) if "| claim | kind |" in line]
    return printed[report - 1]


def test_reproduce_default_tier_passes_logs_and_rewrites_readme(tracked: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, FULL_HEADLINE + LEARNS, FULL_RUNS)
    printed: list[str] = []
    outcomes = reproduce(folder, write_readme=True, echo=printed.append)
    assert [(o.claim.name, o.ran, o.passed, o.failed) for o in outcomes] == [
        ("seeds_learn", False, False, False), ("learns", True, True, False)]
    assert _first_report_line(printed) == "headline reproduced: not run (full tier; `--full` runs it)"
    assert "1 of 1 claim(s) hold; 1 claim(s) without a run control; 1 full-tier claim(s) not run (`--full` runs them)" in printed
    assert not any(line.startswith("== s") for line in printed)
    readme = (folder / "README.md").read_text()
    assert f"`exp reproduce {folder}` (default tier):\n\n**headline reproduced: not run" in readme
    made_up = "(made-up numbers, not a run: no run control)"
    assert ("| **seeds_learn** (full tier): every seed beats chance (paper: \"the model learns\") | headline, mean "
            f"over seeds |  | chance accuracy {made_up} | full tier, not run |") in readme
    assert "| **learns**: it learns | supporting | t[test/accuracy] = " in readme
    assert f"| chance accuracy {made_up}: check false | pass |" in readme
    assert "\nold\n" not in readme and readme.endswith("<!-- claims:end -->\n\nafter\n")
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("demo_paper").experiment_id
    assert not client.search_runs([experiment], "tags.`mlflow.runName` LIKE 'demo_seeds%'")
    logged = client.search_runs([experiment], "tags.`expspec.tier` = 'default'")
    assert list(logged[0].data.metrics) == ["claim/learns"] and logged[0].info.status == "FINISHED"


def test_write_readme_draws_a_figure_per_claim_and_links_it(tracked: str, tmp_path: Path) -> None:
    """specs/<paper>/ gets its figures in docs/claims/<paper>/, linked under the table; a second
    --write-readme writes the same bytes; a renamed claim's figure is deleted; the README check
    (tests/specs/test_reproduce.py) accepts the block and still catches a stale table."""
    (tmp_path / "specs").mkdir()
    folder = _folder(tmp_path / "specs", HEADLINE + LEARNS, "  t: {spec: tiny.yaml}\n  s: {spec: seeds.yaml}\n")
    figures = tmp_path / "docs" / "claims" / "demo_paper"
    outcomes = reproduce(folder, write_readme=True, echo=lambda *_: None)
    assert sorted(p.name for p in figures.iterdir()) == ["learns.png", "seeds_learn.png"]
    assert all(p.stat().st_size < 100_000 for p in figures.iterdir())
    written = readme_table(folder / "README.md")
    assert written == readme_block(folder, outcomes) and written.endswith(
        "threshold dashed): [seeds_learn](../../docs/claims/demo_paper/seeds_learn.png) · "
        "[learns](../../docs/claims/demo_paper/learns.png)")
    assert table_differences(written, readme_block(folder, outcomes)) == []
    stale = written.replace("| pass |", "| FAIL |", 1)
    assert table_differences(stale, readme_block(folder, outcomes))
    readme, pngs = (folder / "README.md").read_bytes(), {p.name: p.read_bytes() for p in figures.iterdir()}
    reproduce(folder, write_readme=True, echo=lambda *_: None)
    assert (folder / "README.md").read_bytes() == readme
    assert {p.name: p.read_bytes() for p in figures.iterdir()} == pngs
    (folder / "claims.yaml").write_text((folder / "claims.yaml").read_text().replace("name: learns", "name: learns_well"))
    reproduce(folder, write_readme=True, echo=lambda *_: None)
    assert sorted(p.name for p in figures.iterdir()) == ["learns_well.png", "seeds_learn.png"]
    assert "learns.png" not in (folder / "README.md").read_text()


def test_reproduce_exits_nonzero_when_a_claim_fails(tracked: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, FULL_HEADLINE + _replace_in(LEARNS, "> 0.6", "> 0.9999"), FULL_RUNS)
    outcomes = reproduce(folder, echo=lambda *_: None)
    assert [o.status for o in outcomes] == ["full tier, not run", "FAIL"]
    assert main(["reproduce", str(folder)]) == 1


def test_a_run_that_fails_makes_its_claims_inconclusive_and_exits_1(tracked: str, tmp_path: Path) -> None:
    """`t` crashes in training (cvm_dependence needs a 'group' column the data lack): the claim that
    reads it is inconclusive with the reason, the one that does not is still checked, exit 1."""
    runs = FULL_RUNS + "  crash: {spec: tiny.yaml, overrides: ['data={type: synthetic_classification, n_features: 6}']}\n"
    crashing = _replace_in(LEARNS, "t['test/accuracy'] > 0.6", "crash['test/accuracy'] > 0.6").replace(
        "numbers: {t: {", "numbers: {crash: {").replace("name: learns", "name: crashes")
    folder = _folder(tmp_path, FULL_HEADLINE + LEARNS + crashing, runs)
    printed: list[str] = []
    outcomes = reproduce(folder, echo=printed.append)
    assert [o.status.split(":")[0] for o in outcomes] == ["full tier, not run", "pass", "inconclusive"]
    assert "run 'crash' did not finish" in outcomes[2].undecided and "group" in outcomes[2].undecided
    assert outcomes[2].failed_runs == ["crash"] and not outcomes[2].failed
    assert any("run(s) that did not finish: crash" in line for line in printed)
    assert main(["reproduce", str(folder)]) == 1


def test_reproduce_checks_every_spec_before_running_any(tracked: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    """A mistake in the second spec the claims need (the seeds sweep, run after `t`): exit 2 and a
    located message, and no run in the store, not even the first."""
    folder = _folder(tmp_path, FULL_HEADLINE + LEARNS, FULL_RUNS)
    with open(folder / "seeds.yaml", "a") as spec:
        spec.write("optimizer: {lr: fast}\n")
    client = MlflowClient(tracked)

    def runs() -> int:  # the session's store: other tests may have run demo_paper before
        return len(client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=10_000))

    before = runs()
    assert main(["reproduce", str(folder), "--full"]) == 2
    assert f"{folder / 'seeds.yaml'}:5:17: optimizer.lr: expected a number > 0, got string 'fast'" in capsys.readouterr().err
    assert runs() == before


def test_reproduce_full_runs_the_seeds_sweep(tracked: str, tmp_path: Path) -> None:
    """End to end over seeds: three trials of 5 steps, seed_mean in the table, headline yes."""
    folder = _folder(tmp_path, FULL_HEADLINE + LEARNS, FULL_RUNS)
    printed: list[str] = []
    outcomes = reproduce(folder, full=True, jobs=1, echo=printed.append)
    assert [(o.claim.name, o.status) for o in outcomes] == [("seeds_learn", "pass"), ("learns", "pass")]
    assert _first_report_line(printed) == "headline reproduced: yes"
    [row] = [line for line in "\n".join(printed).splitlines() if line.startswith("| **seeds_learn**")]
    assert "| headline, mean over seeds | s[test/accuracy] over seeds = [" in row and " (n=3)]" in row
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("demo_paper").experiment_id
    [parent] = client.search_runs([experiment], "tags.`expspec.name` = 'demo_seeds' and tags.`expspec.sweep` = 'true'")
    trials = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert sorted(t.info.run_name for t in trials) == ["seed=0", "seed=1", "seed=2"]
    assert sorted(t.data.params["seed"] for t in trials) == ["0", "1", "2"]
    logged = client.search_runs([experiment], "tags.`expspec.tier` = 'full'")
    assert sorted(logged[0].data.metrics) == ["claim/learns", "claim/seeds_learn"]
    assert logged[0].info.status == "FINISHED"


def test_a_default_claim_cannot_read_a_full_run(tmp_path: Path) -> None:
    claims = HEADLINE + _replace_in(LEARNS, "t['test", "big['test").replace("{t:", "{big:")
    folder = _folder(tmp_path, claims, RUNS + "  big: {spec: tiny.yaml, tier: full}\n")
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    [problem] = info.value.problems
    assert str(problem.mark) == f"{folder / 'claims.yaml'}:17:12"
    assert problem.message == (
        "claim 'learns' is in the default tier but reads run 'big', which is `tier: full` (line 5); "
        "mark the claim `tier: full`, or the run `tier: default`")


def test_tier_values_are_checked(tmp_path: Path) -> None:
    folder = _folder(tmp_path, HEADLINE + "    tier: ful\n")
    with pytest.raises(SpecError) as info:
        load_claims(folder)
    [problem] = info.value.problems
    assert str(problem.mark) == f"{folder / 'claims.yaml'}:13:11"
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
