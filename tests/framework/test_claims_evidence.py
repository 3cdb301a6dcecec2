"""framework/claims/evidence.py through the check language: inconclusive results (a margin within
the seeds' noise, an optimum at the grid's edge), three-valued logic, floors, the headline line,
and the claims-file rules of `paper_says:` and a single headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from framework.claims import Claim, Outcome, evaluate, load_claims
from framework.claims.evidence import Interval, Undecided, margin, paired_margin
from framework.claims.report import headline, summary, table
from framework.claims.reproduction import TrialResult
from framework.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
# Two arms over seeds 0-2 in one sweep: `m` (the method) and `b` (the baseline), per seed.
NOISY = {"m": [0.80, 0.70, 0.90], "b": [0.76, 0.66, 0.87]}  # margin 0.037, seed spread 0.1
CLEAR = {"m": [0.80, 0.81, 0.79], "b": [0.60, 0.62, 0.61]}  # margin 0.19, seed spread 0.02


def _sweep(arms: dict[str, list[float]]) -> list[TrialResult]:
    seeds = range(len(arms["m"]))
    return [TrialResult(None, {"m:test/acc": arms["m"][s], "b:test/acc": arms["b"][s]}, values={"seed": s})
            for s in seeds]


def _claim(check: str, kind: str = "supporting", **more: Any) -> Claim:
    control = more.pop("control", {"text": "the baseline in the method's place", "replace": {"s": "base"}})
    return Claim(name="c", kind=kind, text="t", check=check, control=control, **more)


def _results(arms: dict[str, list[float]]) -> dict[str, Any]:
    return {"s": _sweep(arms), "base": _sweep({"m": arms["b"], "b": arms["b"]})}


MARGIN = "margin(column(s, 'm:test/acc'), column(s, 'b:test/acc')) > 0"
PAIRED = "paired_margin(column(s, 'm:test/acc'), column(s, 'b:test/acc')) > 0"


def test_margin_is_scipys_welch_interval() -> None:
    interval = margin(NOISY["m"], NOISY["b"])
    expected = stats.ttest_ind(NOISY["m"], NOISY["b"], equal_var=False).confidence_interval(0.95)
    assert (interval.low, interval.high) == pytest.approx((expected.low, expected.high))
    assert interval.low < 0 < interval.high  # within the seeds' noise
    paired = paired_margin(NOISY["m"], NOISY["b"])  # the same seeds: their shared noise cancels
    assert paired.low > 0
    assert isinstance(margin([0.5], [0.4, 0.3]), Undecided)
    deterministic = margin([0.5, 0.5], [0.4, 0.4])
    assert (deterministic.low, deterministic.high) == pytest.approx((0.1, 0.1))


@pytest.mark.parametrize(
    "check, arms, status",
    [
        (MARGIN, CLEAR, "pass"),
        (MARGIN, NOISY, "inconclusive"),
        (PAIRED, NOISY, "pass"),
        ("margin(column(s, 'm:test/acc'), column(s, 'b:test/acc')) < 0", CLEAR, "FAIL"),
        # three-valued logic: a refuted part decides an `and`, a proven part decides an `or`
        (f"{MARGIN} and mean(column(s, 'm:test/acc')) > 0.95", NOISY, "FAIL"),
        (f"{MARGIN} or mean(column(s, 'm:test/acc')) > 0.78", NOISY, "pass"),
        (f"{MARGIN} and mean(column(s, 'm:test/acc')) > 0.5", NOISY, "inconclusive"),
        (f"not {MARGIN}", NOISY, "inconclusive"),
        # arithmetic on a range stays a range; a function of one is undecided
        ("margin(column(s, 'm:test/acc'), column(s, 'b:test/acc')) * 2 > 0.3", CLEAR, "pass"),
        ("sqrt(margin(column(s, 'm:test/acc'), column(s, 'b:test/acc'))) > 0", CLEAR, "inconclusive"),
        ("abs(margin(column(s, 'm:test/acc'), column(s, 'b:test/acc'))) > 0.1", CLEAR, "pass"),
    ],
    ids=["clear margin", "margin in noise", "paired", "clearly refuted", "and false", "or true", "and undecided",
         "not undecided", "arithmetic", "function of a range", "abs of a range"],
)
def test_a_comparison_within_noise_is_inconclusive(check: str, arms: dict[str, list[float]], status: str) -> None:
    outcome = evaluate(_claim(check), _results(arms))
    assert outcome.status.split(":")[0] == status, outcome
    assert outcome.failed is (status == "FAIL")
    assert outcome.passed is (status == "pass")
    if status == "inconclusive":
        assert "straddles 0" in outcome.undecided or "a function of the range" in outcome.undecided


def test_the_table_shows_the_interval_and_the_reason() -> None:
    outcome = evaluate(_claim(MARGIN), _results(NOISY))
    row = table([outcome]).splitlines()[2]
    interval = margin(NOISY["m"], NOISY["b"])
    assert f"[{interval.low:.4g}, {interval.high:.4g}] (0.03667, Welch 95% over n=3, 3)" in row
    assert row.endswith(f"| inconclusive: {interval!r} straddles 0 |")


def test_the_level_widens_the_interval() -> None:
    arms = {"m": [0.80, 0.78, 0.83], "b": [0.76, 0.74, 0.77]}
    assert evaluate(_claim(MARGIN), _results(arms), level=0.8).passed
    assert evaluate(_claim(MARGIN), _results(arms), level=0.999).inconclusive


GRID = [{"lr": lr, "seed": s} for lr in (0.001, 0.01, 0.1) for s in (0, 1, 2)]


def _grid(losses: list[float]) -> dict[str, Any]:
    return {"g": [TrialResult(None, {"val/loss": v}, values=t) for t, v in zip(GRID, losses)]}


@pytest.mark.parametrize(
    "losses, check, status",
    [
        ([3, 3, 3, 1, 1, 1, 2, 2, 2], "best(g, 'lr', 'val/loss', 'min') == 0.01", "pass"),
        ([3, 3, 3, 2, 2, 2, 1, 1, 1], "best(g, 'lr', 'val/loss', 'min') == 0.1", "inconclusive"),
        ([3, 3, 3, 2, 2, 2, 1, 1, 1], "best(g, 'lr', 'val/loss', 'min') >= 0.01", "pass"),
        ([1, 1, 1, 2, 2, 2, 3, 3, 3], "best(g, 'lr', 'val/loss', 'min') >= 0.01", "FAIL"),
        ([3, 3, 3, 1, 1, 1, 2, 2, 2],
         "argmin_param(seed_mean(g, 'val/loss'), seed_param(g, 'lr')) == 0.01", "pass"),
        ([1, 1, 1, 2, 2, 2, 3, 3, 3],
         "argmin_param(seed_mean(g, 'val/loss'), seed_param(g, 'lr')) <= 0.001", "pass"),
        ([1, 1, 1, 2, 2, 2, 3, 3, 3],
         "argmin_param(seed_mean(g, 'val/loss'), seed_param(g, 'lr')) == 0.001", "inconclusive"),
    ],
    ids=["interior", "at the edge", "edge, one-sided claim", "edge, refuted", "argmin interior", "argmin edge bound",
         "argmin edge equality"],
)
def test_an_optimum_at_the_grid_edge_is_inconclusive(losses: list[float], check: str, status: str) -> None:
    control = {"text": "a flat curve", "numbers": {"g": [{"val/loss": 1.0, "values": t} for t in GRID]}}
    outcome = evaluate(_claim(check, control=control), _grid(losses))
    assert outcome.status.split(":")[0] == status, outcome
    if status == "inconclusive":
        assert "best at the grid's" in outcome.undecided


FLOOR = {"text": "persistence (the last value carried forward)", "check": "mean(column(s, 'm:test/acc')) > 0.75"}


@pytest.mark.parametrize(
    "arms, floor_check, status",
    [
        (CLEAR, FLOOR["check"], "pass"),
        (CLEAR, "mean(column(s, 'm:test/acc')) > 0.9", "FAIL: not above its floor"),
        (CLEAR, "margin(column(s, 'm:test/acc'), [0.79, 0.81, 0.80]) > 0", "inconclusive"),
    ],
    ids=["above", "below", "undecided"],
)
def test_a_floor_is_the_trivial_answer_to_beat(arms: dict[str, list[float]], floor_check: str, status: str) -> None:
    outcome = evaluate(_claim(MARGIN, floor={"text": FLOOR["text"], "check": floor_check}), _results(arms))
    assert outcome.status.split(":")[0] == status.split(":")[0] and outcome.status.startswith(status), outcome
    assert outcome.failed is status.startswith("FAIL")
    assert any(k.startswith("floor: ") for k in outcome.numbers)
    assert f"; floor: {FLOOR['text']}" in table([outcome])


def _outcome(name: str, kind: str, passed: bool, undecided: str = "", **more: Any) -> Outcome:
    claim = Claim(name=name, kind=kind, text="t", check="a['x'] > 0",
                  control={"text": "b", "replace": {"a": "b"}}, **more)
    return Outcome(claim, passed, control_passed=False, undecided=undecided)


HEAD = {"over": "mean", "paper_says": "it works"}


@pytest.mark.parametrize(
    "outcomes, line",
    [
        ([_outcome("h", "headline", False, "within noise", **HEAD)], "headline reproduced: inconclusive (h)"),
        ([_outcome("h", "headline", True, **HEAD), _outcome("g", "headline", False, "edge", **HEAD)],
         "headline reproduced: inconclusive (g)"),
        ([_outcome("h", "headline", False, **HEAD), _outcome("g", "headline", False, "edge", **HEAD)],
         "headline reproduced: NO (h; inconclusive: g)"),
        ([_outcome("d", "deviation", False, "within noise", headline=True, **HEAD)],
         "headline reproduced: inconclusive (d)"),
    ],
    ids=["inconclusive", "one of two", "a failure wins", "deviation"],
)
def test_an_inconclusive_headline_is_never_yes(outcomes: list[Outcome], line: str) -> None:
    assert headline(outcomes) == line
    assert all(not o.failed for o in outcomes if o.undecided)


def test_summary_counts_inconclusive_claims_and_missing_run_controls() -> None:
    made_up = Claim(name="m", kind="supporting", text="t", check="a['x'] > 0",
                    control={"text": "flat", "numbers": {"a": {"x": 0}}})
    outcomes = [_outcome("h", "headline", True, **HEAD), _outcome("s", "supporting", False, "within noise"),
                Outcome(made_up, True, control_passed=False)]
    assert summary(outcomes) == "2 of 3 claim(s) hold; 1 inconclusive; 1 claim(s) without a run control"
    assert "flat (made-up numbers, not a run: no run control): check false" in table(outcomes)
    assert '**h**: t (paper: "it works")' in table(outcomes)


def _folder(tmp_path: Path, claims: str) -> Path:
    folder = tmp_path / "demo_paper"
    folder.mkdir()
    (folder / "tiny.yaml").write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: demo\npaper: demo_paper\n")
    (folder / "seeds.yaml").write_text("extends: tiny.yaml\nsweep: {seeds: [0, 1, 2]}\n")
    (folder / "claims.yaml").write_text("paper: demo_paper\nruns:\n  s: {spec: seeds.yaml}\nclaims:\n" + claims)
    return folder


def _headline(name: str, says: str | None) -> str:
    quote = f"    paper_says: {says}\n" if says else ""
    return (f"  - name: {name}\n    kind: headline\n    over: mean\n{quote}    text: t\n"
            f"    check: seed_mean(s, 'test/accuracy')[0] > 0.6\n"
            f"    control: {{text: chance, numbers: {{s: [{{test/accuracy: 0.5}}]}}}}\n")


@pytest.mark.parametrize(
    "claims, message",
    [
        (_headline("h", None), "headline claim 'h' needs `paper_says:`, the abstract's own words it tests"),
        (_headline("h", "it learns") + _headline("g", "it is fast"),
         "a paper has one headline, but its headline claims quote 2 different `paper_says:`"),
        ("level: 1.5\n" + _headline("h", "it learns"), "level: Input should be less than 1"),
        (_headline("h", "it learns").replace("    text: t\n", "    text: t\n    floor: {text: chance, check: 'zz > 1'}\n"),
         "unknown run 'zz'"),
    ],
    ids=["no paper_says", "two headlines", "level", "floor check"],
)
def test_claims_file_rules_of_the_headline(tmp_path: Path, claims: str, message: str) -> None:
    text = claims
    if text.startswith("level"):  # a top-level key: move it above `claims:`
        level, text = text.split("\n", 1)
        folder = _folder(tmp_path, text)
        path = folder / "claims.yaml"
        path.write_text(f"{level}\n" + path.read_text())
    else:
        folder = _folder(tmp_path, text)
    with pytest.raises(SpecError) as error:
        load_claims(folder)
    assert any(message in str(p) for p in error.value.problems), [str(p) for p in error.value.problems]


def test_two_headline_claims_quoting_one_sentence_are_one_headline(tmp_path: Path) -> None:
    claims, _ = load_claims(_folder(tmp_path, _headline("h", "it learns") + _headline("g", "it learns")))
    assert [c.name for c in claims.claims if c.is_headline] == ["h", "g"]


def test_an_interval_is_not_a_truth_value() -> None:
    with pytest.raises(TypeError, match="compare it with a number"):
        bool(Interval(0.1, 0.2))
    outcome = evaluate(_claim("margin(column(s, 'm:test/acc'), column(s, 'b:test/acc'))"), _results(CLEAR))
    assert outcome.status == "FAIL" and "compare it with a number" in outcome.error


def test_exp_explain_claims_documents_the_language(capsys: pytest.CaptureFixture[str]) -> None:
    from framework.cli import main

    assert main(["explain", "claims"]) == 0
    out = capsys.readouterr().out
    for words in ("paper_says:", "floor: {text, check}", "margin(a, b): the Welch confidence interval",
                  "best(sweep, 'key', 'metric', 'max'|'min')", "argmax_param:", "three-valued (Kleene)"):
        assert words in out, words


def test_a_timing_claims_numbers_are_not_compared_with_the_readme() -> None:
    from framework.claims import table_differences
    from framework.result_cache import RunResult

    claim = Claim(name="fast", kind="supporting", text="t", check="a['test/ms'] * 10 <= b['test/ms']", timing=True,
                  control={"text": "b in a's place", "replace": {"a": "b"}})
    written, rerun, slower = ({"a": RunResult("1", {"test/ms": a}), "b": RunResult("2", {"test/ms": 800.0})}
                              for a in (3.0, 3.4, 90.0))
    row = table([evaluate(claim, written)])
    assert "wall-clock: numbers vary by run" in row
    assert table_differences(row, table([evaluate(claim, rerun)])) == []  # other times, same result
    assert table_differences(row, table([evaluate(claim, slower)]))  # the result changed: FAIL
    untimed = claim.model_copy(update={"timing": False})
    assert table_differences(table([evaluate(untimed, written)]), table([evaluate(untimed, rerun)]))


def test_a_stages_control_reads_another_stage_of_the_same_runs() -> None:
    trials = [TrialResult(None, {"cvm:test/gap": g, "base:test/gap": b}, values={"seed": s})
              for s, (g, b) in enumerate([(0.10, 0.40), (0.12, 0.42), (0.11, 0.39)])]
    claim = _claim("max(column(s, 'cvm:test/gap')) <= 0.5 * min(column(s, 'base:test/gap'))",
                   control={"text": "the unregularized stage in the method's place", "stages": {"cvm": "base"}})
    outcome = evaluate(claim, {"s": trials})
    assert outcome.status == "pass" and outcome.control_passed is False and not outcome.control_error
    assert "no run control" not in table([outcome])
    wrong = _claim(claim.check, control={"text": "a stage that does not exist", "stages": {"cvm": "nope"}})
    assert evaluate(wrong, {"s": trials}).status == "FAIL: its control raises"
