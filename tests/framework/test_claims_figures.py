"""framework/claims/figures.py: what a check read and compared (recorded by the evaluator), one PNG
per claim, the README line linking them, stale figures removed. `exp reproduce --write-readme`
end to end is in test_claims.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from framework.claims import Claim, Outcome, evaluate, readme_block
from framework.claims.evidence import Interval
from framework.claims.outcome import Tested
from framework.claims.figures import MAX_TESTED, figure_dir, figure_links, has_figure, write_figures
from framework.claims.reproduction import TrialResult
from framework.runner import RunResult

RUNS = {"a": RunResult("1", {"test/gap": 0.2}), "b": RunResult("2", {"test/gap": 0.4})}
SEEDS = [TrialResult(None, {"test/gap": g}, values={"seed": s}) for s, g in enumerate([0.1, 0.2, 0.3])]
GRID = [TrialResult(None, {"test/gap": 1 / w + s / 100}, values={"w": w, "seed": s}) for w in (1, 10, 100) for s in (0, 1, 2)]
NAMED = [TrialResult(None, {"test/gap": g}, values={"method": m, "seed": 0}) for m, g in (("cvm", 0.1), ("hsic", 0.3))]
RESULTS = {**RUNS, "s": SEEDS, "g": GRID, "n": NAMED}
SWAP = {"text": "b in place of a", "replace": {"a": "b"}}


def _claim(check: str, name: str = "c", **more: Any) -> Claim:
    return Claim(name=name, kind="supporting", text="t", check=check, control=SWAP, **more)


def test_the_check_records_each_series_it_read_with_the_trials_values() -> None:
    outcome = evaluate(_claim("mean(column(s, 'test/gap')) <= 0.6 * b['test/gap'] and 0.1 < a['test/gap']"), RESULTS)
    assert outcome.read == {"s[test/gap]": [({"seed": 0}, 0.1), ({"seed": 1}, 0.2), ({"seed": 2}, 0.3)],
                            "b[test/gap]": [({}, 0.4)], "a[test/gap]": [({}, 0.2)]}
    [computed, written] = outcome.tested
    assert computed == Tested("mean(column(s, 'test/gap'))", pytest.approx(0.2), "<=", pytest.approx(0.24), True,
                              "0.6 * b['test/gap']")
    assert written == Tested("a['test/gap']", 0.2, ">", 0.1, True)  # `0.1 < a` read as `a > 0.1`


@pytest.mark.parametrize(
    "check, read, tested",
    [
        ("min(seed_mean(g, 'test/gap')) < 0.01", ["g[test/gap]"], [("min(seed_mean(g, 'test/gap'))", "<", 0.01, False)]),
        ("best(g, 'w', 'test/gap', 'min') >= 10", ["g[test/gap]"], [("best(g, 'w', 'test/gap', 'min')", ">=", 10.0, True)]),
        ("margin(column(s, 'test/gap'), column(n, 'test/gap')) < 0.5", ["s[test/gap]", "n[test/gap]"],
         [("margin(column(s, 'test/gap'), column(n, 'test/gap'))", "<", 0.5, None)]),
        ("seed_param(g, 'w') == [1, 10, 100]", [], []),  # a list compared: nothing to draw
        ("a['test/gap'] < b['test/gap'] + 1", ["a[test/gap]", "b[test/gap]"], [("a['test/gap']", "<", 1.4, True)]),
    ],
    ids=["seed_mean", "best, open beyond the grid", "margin, undecided", "list", "computed threshold"],
)
def test_what_each_accessor_records(check: str, read: list[str], tested: list[tuple[str, str, float, bool | None]]) -> None:
    outcome = evaluate(_claim(check), RESULTS)
    assert list(outcome.read) == read
    assert [(t.quantity, t.op, pytest.approx(t.threshold), t.holds) for t in outcome.tested] == tested


def test_a_floor_is_recorded_under_its_name() -> None:
    outcome = evaluate(_claim("a['test/gap'] < 0.3", floor={"text": "b", "check": "b['test/gap'] > 0.1"}), RESULTS)
    assert list(outcome.read) == ["a[test/gap]", "floor: b[test/gap]"]
    assert [t.quantity for t in outcome.tested] == ["a['test/gap']", "floor: b['test/gap']"]


# One claim per kind of figure: arms over seeds, a curve over a log-spaced grid, a curve over named
# settings, an interval, an open interval (best at the grid's edge), more comparisons than panels.
CHECKS = {
    "arms": "mean(column(s, 'test/gap')) <= 0.6 * mean(column(n, 'test/gap'))",
    "log_curve": "min(seed_mean(g, 'test/gap')) < 0.05",
    "named_curve": "column(n, 'test/gap')[0] < column(n, 'test/gap')[1]",
    "interval": "margin(column(s, 'test/gap'), column(g, 'test/gap')) < 0.5",
    "open_interval": "best(g, 'w', 'test/gap', 'min') >= 10 and a['test/gap'] < 1",
    "many_tests": " and ".join(f"a['test/gap'] < {k}" for k in range(1, MAX_TESTED + 3)),
}


def _outcomes() -> list[Outcome]:
    return [evaluate(_claim(check, name), RESULTS) for name, check in CHECKS.items()]


def _paper(tmp_path: Path) -> Path:
    folder = tmp_path / "specs" / "demo"
    folder.mkdir(parents=True)
    return folder


def test_figures_are_small_deterministic_and_stale_ones_go(tmp_path: Path) -> None:
    folder = _paper(tmp_path)
    stale = figure_dir(folder) / "renamed_claim.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    not_run = Outcome(_claim("a['test/gap'] < 1", "full_tier"), False, ran=False)
    written = write_figures(folder, [*_outcomes(), not_run])
    assert figure_dir(folder) == tmp_path / "docs" / "claims" / "demo"
    assert sorted(p.name for p in figure_dir(folder).iterdir()) == sorted(f"{name}.png" for name in CHECKS)
    assert written == [figure_dir(folder) / f"{name}.png" for name in CHECKS]
    sizes = {p.name: p.stat().st_size for p in written}
    assert all(1_000 < size < 100_000 for size in sizes.values()), sizes
    first = {p.name: p.read_bytes() for p in written}
    write_figures(folder, _outcomes())
    assert {p.name: p.read_bytes() for p in written} == first  # the same outcomes, the same bytes
    write_figures(folder, _outcomes()[:2])
    assert sorted(p.name for p in figure_dir(folder).iterdir()) == ["arms.png", "log_curve.png"]


def test_the_readme_block_links_each_figure_under_the_table(tmp_path: Path) -> None:
    folder = _paper(tmp_path)
    outcomes = [*_outcomes()[:2], Outcome(_claim("a['test/gap'] < 1", "full_tier"), False, ran=False)]
    assert [has_figure(o) for o in outcomes] == [True, True, False]
    links = ("Figures (what each check read; what it compared, threshold dashed): "
             "[arms](../../docs/claims/demo/arms.png) · [log_curve](../../docs/claims/demo/log_curve.png)")
    assert figure_links(folder, outcomes) == links
    assert readme_block(folder, outcomes).endswith("| full tier, not run |\n\n" + links)
    assert figure_links(folder, outcomes[2:]) == ""


def test_a_paper_folder_outside_specs_keeps_its_figures(tmp_path: Path) -> None:
    folder = tmp_path / "my_paper"
    folder.mkdir()
    assert figure_dir(folder) == folder.resolve() / "figures"
    assert figure_links(folder, _outcomes()[:1]) == (
        "Figures (what each check read; what it compared, threshold dashed): [arms](figures/arms.png)")


def test_an_interval_figure_draws_without_finite_ends(tmp_path: Path) -> None:
    """best() at the grid's edge is an Interval open on one side: drawn as an arrow head at its end."""
    outcome = evaluate(_claim("best(g, 'w', 'test/gap', 'min') >= 10", "edge"), RESULTS)
    assert isinstance(outcome.tested[0].value, Interval) and outcome.tested[0].value.high == float("inf")
    [path] = write_figures(_paper(tmp_path), [outcome])
    assert path.read_bytes().startswith(b"\x89PNG")
