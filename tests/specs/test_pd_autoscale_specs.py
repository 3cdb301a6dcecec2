"""pd_autoscale's paper-scale specs (a real request trace, tier full) stop at once, naming the
missing trace file and its variable, when it is not on this machine (nothing is downloaded); with a
trace CSV they build and run."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.runner import run

pytest.importorskip("gymnasium")

SPECS = Path(__file__).resolve().parents[2] / "specs/pd_autoscale"


@pytest.mark.parametrize("name", ["sweep_policy_trace.yaml", "sweep_heuristic_trace.yaml"])
def test_without_the_trace_the_paper_spec_names_what_is_missing(
        name: str, tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PD_AUTOSCALE_TRACE", raising=False)
    with pytest.raises(FileNotFoundError, match=r"pd_serving: request trace CSV .* not found "
                                                r"\(\$PD_AUTOSCALE_TRACE = \(unset\)\).*Nothing is downloaded"):
        run(SPECS / name)


def test_with_a_trace_csv_the_heuristic_runs_on_it(tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 10,000 s of requests: the held-out last 20 % (test_window) holds a 1,800 s episode
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{t * 0.1:.1f},{300 + t % 50},{150 + t % 40}" for t in range(100000)]
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("PD_AUTOSCALE_TRACE", str(trace))
    result = run(SPECS / "sweep_heuristic_trace.yaml", ["data.test_batches=1", "data.env.num_envs=2"])
    assert 2 <= result.metrics["test/gpus"] <= 32 and 0 <= result.metrics["test/slo_attainment"] <= 1
