"""`exp reproduce specs/<paper>/`: obtain the runs the claims read, check the claims, report.

Every spec the runs need is validated first (`check_specs`). Runs are obtained in the order `runs:` lists them (a later spec may reuse an earlier one's cached
weights). A plain spec is obtained through the result cache (a finished run with the same
operative-spec hash is reused unless `fresh`); a sweep spec runs through `exp sweep`'s machinery,
which skips trials that already finished. Only the tiers asked for are obtained and checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.claims.evidence import FailedRun
from framework.claims.expressions import evaluate
from framework.claims.outcome import Outcome
from framework.claims.report import heading, headline, rewrite_readme, summary, table
from framework.claims.schema import CLAIMS_FILE, ClaimsFile, RunRef, in_tier, load_claims
from framework.result_cache import RunResult


@dataclass
class TrialResult(RunResult):
    """A sweep trial's result; `values` are the values the trial sets (what `param()` reads)."""

    values: dict[str, Any] = field(default_factory=dict)


def reproduce(folder: str | Path, fresh: bool = False, write_readme: bool = False, jobs: int = 1,
              echo: Any = print, full: bool = False, isolate: str = "fork", record: bool = False,
              verify: int = 0, verify_all: bool = False, sample_seed: str | None = None) -> list[Outcome]:
    """Obtain the runs of the tiers asked for (default only, or all with `full`), check the claims,
    print the table and a summary, log them to MLflow, optionally rewrite the README's table.
    Returns an outcome per claim, in file order; a claim outside the tiers has `ran` False. The
    report's text (what --write-readme writes) is `report(folder, outcomes, full)`.

    Recorded results (framework.claims.record): `record` runs the default tier from scratch and
    writes the folder's results.lock.yaml; otherwise a default-tier alias recorded for its current
    spec hashes is read from the record (unless `fresh`), and `verify` (a sample of that many) or
    `verify_all` re-runs recorded runs from scratch and raises RecordMismatch on a difference."""
    from framework.claims import record as rec

    folder = Path(folder)
    claims, _ = load_claims(folder)
    runs = {alias: ref for alias, ref in claims.runs.items() if in_tier(ref.tier, full)}
    check_specs(runs, folder)
    if record:
        results = _record(folder, claims, runs, jobs, echo, isolate)
    else:
        recorded = {} if fresh else _recorded(folder, claims, runs, echo)
        if verify or verify_all:
            _verify(folder, claims, recorded, None if verify_all else verify, sample_seed, echo)
        results = obtain_all({a: ref for a, ref in runs.items() if a not in recorded}, folder, fresh, jobs, echo, isolate)
        results.update({alias: rec.as_results(r, plan.sweep) for alias, (plan, r) in recorded.items()})
        results = {alias: results[alias] for alias in runs}
    outcomes = [evaluate(c, results, claims.level) if in_tier(c.tier, full) else Outcome(c, False, ran=False)
                for c in claims.claims]
    text = report(folder, outcomes, full)
    echo(headline(outcomes))
    echo(text)
    echo(summary(outcomes))
    log_outcomes(claims, folder, outcomes, text, full)
    if write_readme:
        from framework.claims.figures import figure_dir, write_figures

        figures = write_figures(folder, outcomes)
        from framework.claims.papers import rewrite_papers_table

        rewrite_readme(folder / "README.md", readme_block(folder, outcomes, full))
        echo(f"rewrote the claims table in {folder / 'README.md'} and {len(figures)} figure(s) in {figure_dir(folder)}")
        if (root_readme := rewrite_papers_table(folder)) is not None:
            echo(f"rewrote the table of papers in {root_readme}")
    return outcomes


def _record(folder: Path, claims: ClaimsFile, runs: dict[str, RunRef], jobs: int, echo: Any,
            isolate: str) -> dict[str, Any]:
    """Run the default tier from scratch in a throwaway store and write the record."""
    from framework.claims import record as rec
    from framework.errors import UsageError

    if any(ref.tier != "default" for ref in runs.values()):
        raise UsageError("--record records the default tier; run it without --full")
    planned = rec.plan_runs(runs, folder)
    with rec.throwaway_store():
        results = obtain_all(runs, folder, True, jobs, echo, isolate)
        failed = [alias for alias, r in results.items() if isinstance(r, FailedRun)]
        if failed:
            echo(f"not recorded: run(s) {', '.join(failed)} did not finish")
        else:
            echo(f"recorded {len(runs)} run(s) in {rec.write_record(folder, claims.paper, planned, results)}")
    return results


def _recorded(folder: Path, claims: ClaimsFile, runs: dict[str, RunRef], echo: Any) -> dict[str, tuple[Any, list[Any]]]:
    """alias -> (its plan, its recorded runs), for the default-tier aliases recorded for their
    current spec hashes (framework.claims.record)."""
    from framework.claims import record as rec

    data = rec.read_record(folder)
    if data is None:
        return {}
    default = {alias: ref for alias, ref in runs.items() if ref.tier == "default"}
    planned = rec.plan_runs(default, folder)
    found = {alias: (plan, r) for alias, plan in planned.items() if (r := rec.recorded_runs(data, plan)) is not None}
    if found:
        echo(f"from recorded results: {len(found)} of {len(runs)} run(s) read from {rec.record_path(folder)} "
             f"(recorded on {data.get('code', 'unknown')}); `--verify N` re-runs a sample, `--verify-all` every one")
    stale = sorted(set(default) - set(found))
    if stale:
        echo(f"not recorded for their current specs, so run now: {', '.join(stale)} "
             f"(re-record: `{rec.rerecord_command(folder)}`)")
    return found


def _verify(folder: Path, claims: ClaimsFile, recorded: dict[str, tuple[Any, list[Any]]], size: int | None,
            seed: str | None, echo: Any) -> None:
    """Re-run a sample (or all, `size` None) of the recorded runs from scratch; RecordMismatch on a difference."""
    from framework.claims import record as rec
    from framework.claims.expressions import parse_check, used_aliases
    from framework.errors import UsageError

    if not recorded:
        raise UsageError(f"{folder}: nothing to verify: no results recorded for the current specs "
                         f"(`{rec.rerecord_command(folder)}` records them)")
    aliases = set(claims.runs)
    headline = [a for c in claims.claims if c.is_headline and c.tier == "default"
                for a in sorted(used_aliases(parse_check(c.check, aliases), aliases))]
    seed = f"{seed or rec.code_version()}:{claims.paper}"
    runs = {alias: r for alias, (_, r) in recorded.items()}
    picks = rec.sample(runs, list(dict.fromkeys(headline)), size, seed)
    planned = {alias: plan for alias, (plan, _) in recorded.items()}
    echo(f"verifying {len(picks)} of {sum(map(len, runs.values()))} recorded run(s) by re-running them "
         f"from scratch (sample seed {seed!r})")
    with rec.throwaway_store():
        for line in rec.verify(folder, planned, picks, claims.verify, echo):
            echo(line)


def report(folder: str | Path, outcomes: list[Outcome], full: bool = False) -> str:
    """The report `exp reproduce` prints and `--write-readme` writes: command, headline, table."""
    return f"{heading(folder, full)}\n\n**{headline(outcomes)}**\n\n{table(outcomes)}"


def readme_block(folder: str | Path, outcomes: list[Outcome], full: bool = False) -> str:
    """What `--write-readme` writes between the README's claims markers: the report, then a line
    linking each claim's figure (framework.claims.figures)."""
    from framework.claims.figures import figure_links

    links = figure_links(folder, outcomes)
    return report(folder, outcomes, full) + (f"\n\n{links}" if links else "")


def check_specs(runs: dict[str, RunRef], folder: Path) -> None:
    """Validate every spec the runs need, with its overrides and every sweep trial, against the
    committed schema (no torch import), before anything runs: a mistake in the last one is a
    SpecError now, not after the runs before it trained, and leaves no run in the store."""
    from framework.spec_check import check_spec

    for ref in runs.values():
        check_spec(folder / ref.spec, ref.overrides, trials=True)


def obtain_all(runs: dict[str, RunRef], folder: Path, fresh: bool, jobs: int, echo: Any = print,
               isolate: str = "fork") -> dict[str, Any]:
    """alias -> RunResult, or a list of TrialResults (in trial order) for a sweep spec. A sweep's
    trials run as `exp sweep --isolate ISOLATE` runs them (default: forked from one warm server,
    which serves every sweep of the reproduction)."""
    from framework.loader import load_spec
    from framework.plan import expand_sweep

    results: dict[str, Any] = {}
    for alias, ref in runs.items():
        spec = folder / ref.spec
        try:
            if expand_sweep(load_spec(spec, ref.overrides)):
                echo(f"== {alias}: sweep {spec}")
                results[alias] = obtain_sweep(alias, spec, ref.overrides, jobs, echo, isolate, fresh)
            else:
                echo(f"== {alias}: {spec} {' '.join(ref.overrides)}".rstrip())
                results[alias] = _obtained(spec, ref.overrides, fresh)
        except RunFailed as error:
            echo(f"== {alias}: did not finish: {error}")
            results[alias] = FailedRun(alias, str(error))
    return results


def _obtained(spec: Path, overrides: list[str], fresh: bool) -> Any:
    """`runner.obtain`, with a run that crashed (marked FAILED in the store by the runner) as
    RunFailed; a mistake in the spec stays a SpecError, an interrupt an interrupt."""
    from framework.errors import SpecError
    from framework.runner import obtain

    try:
        return obtain(spec, overrides, fresh=fresh)
    except SpecError:
        raise
    except Exception as error:  # the run itself failed: its claims are inconclusive, the exit is 1
        raise RunFailed(f"{type(error).__name__}: {error}") from error


class RunFailed(RuntimeError):
    """A run or a sweep trial of the claims did not finish (it is FAILED or KILLED in the store):
    the claims that read it are inconclusive, and `exp reproduce` exits 1."""


def obtain_sweep(alias: str, spec: Path, overrides: list[str], jobs: int, echo: Any = print,
                 isolate: str = "fork", fresh: bool = False) -> list[TrialResult]:
    """Every trial of the sweep, finished now or earlier (a skipped trial's metrics are read from
    its MLflow run; with `fresh`, every trial runs now); RuntimeError when a trial did not finish."""
    from framework.sweep import run_sweep
    from framework.trial_launchers import SKIPPED
    from framework.tracking import client

    sweep = run_sweep(spec, overrides, jobs=jobs, echo=echo, isolate=isolate, fresh=fresh)
    if sweep.failed:
        raise RunFailed(f"{len(sweep.failed)} trial(s) of {spec} did not finish: "
                        + "; ".join(f"{o.trial.name}: {o.status}" for o in sweep.failed))
    trials = []
    for outcome in sweep.outcomes:
        metrics = outcome.metrics
        if outcome.status == SKIPPED:
            metrics = dict(client().get_run(outcome.run_id).data.metrics)
        trials.append(TrialResult(run_id=outcome.run_id, metrics=metrics, values=outcome.trial.values))
    return trials


def log_outcomes(claims: ClaimsFile, folder: Path, outcomes: list[Outcome], text: str, full: bool) -> None:
    """One run per reproduction in the paper's experiment, tagged `expspec.reproduce` and
    `expspec.tier`: a `claim/<name>` metric (1 pass, 0 fail, 0.5 inconclusive) per claim that ran, and the table as
    `claims.md`. FINISHED when no claim failed, else FAILED naming the failed claims."""
    from framework.runner import ended_on_error
    from framework.tracking import Tracker

    op = {"name": f"{claims.paper} claims", "paper": claims.paper, "description": "", "tracking": {"uri": None}}
    tags = {"expspec.reproduce": "true", "expspec.tier": "full" if full else "default"}
    tracker = Tracker(op, str(folder / CLAIMS_FILE), "", [], extra_tags=tags)
    run_id = tracker.start(log_params=False)
    failed = [o.claim.name for o in outcomes if o.failed]
    with ended_on_error(tracker):
        # 1 pass, 0 fail, 0.5 inconclusive
        tracker.log_metrics({f"claim/{o.claim.name}": 0.5 if o.inconclusive else float(not o.failed and o.passed)
                             for o in outcomes if o.ran})
        tracker.client.log_text(run_id, text + "\n", "claims.md")
        if failed:
            tracker.client.set_tag(run_id, "expspec.error", "claims failed: " + ", ".join(failed))
    if failed:
        tracker.client.set_terminated(run_id, "FAILED")
    else:
        tracker.finish()
