"""framework/sweep.py: trials as child runs of one parent, failures reported, resume by hash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from framework.discovery import spec_files
from framework.runner import plan_hash, prepare
from framework.sweep import run_sweep
from framework.sweep_plan import plan_trials
from framework.trial_launchers import FAILED, FINISHED, KILLED, SKIPPED

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["trainer.max_steps=3", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]


def _spec(tmp_path: Path, grid: str, kind: str = "grid") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: sweep-test\npaper: sweep_test\n"
                    f"sweep:\n  {kind}: {grid}\n")
    return path


def test_trials_are_children_and_rerun_skips_finished(tracked: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "{loss.terms.cvm.weight: [0.0, 5.0]}")
    lines: list[str] = []
    result = run_sweep(spec, SHORT, jobs=2, echo=lines.append)
    assert [o.status for o in result.outcomes] == [FINISHED, FINISHED]
    client = MlflowClient(tracked)
    children = [client.get_run(o.run_id) for o in result.outcomes]
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {result.parent_run_id}
    assert [c.data.tags["mlflow.runName"] for c in children] == ["weight=0.0", "weight=5.0"]  # the parent names the spec
    assert [c.data.params["loss.terms.cvm.weight"] for c in children] == ["0.0", "5.0"]
    assert [c.data.params["hardware.threads"] for c in children] == ["1", "1"]  # the spec says 1 (and 2 cores / 2 jobs allow 1)
    assert client.get_run(result.parent_run_id).info.status == "FINISHED"

    again = run_sweep(spec, SHORT, jobs=2, echo=lines.append)
    assert [o.status for o in again.outcomes] == [SKIPPED, SKIPPED]
    assert again.parent_run_id == result.parent_run_id
    assert any(line.startswith("[skip] weight=0.0: already finished") for line in lines)
    assert not any(line.startswith("[link]") for line in lines)  # already children of this parent

    fresh = run_sweep(spec, SHORT, jobs=2, echo=lines.append, fresh=True)  # `exp reproduce --fresh`
    assert [o.status for o in fresh.outcomes] == [FINISHED, FINISHED]
    assert not {o.run_id for o in fresh.outcomes} & {o.run_id for o in result.outcomes}


def test_reused_trials_are_linked_into_a_new_sweep_and_temp_folders_removed(
        tracked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wider grid is a new sweep (a new parent): the trials an earlier sweep finished are
    linked into it, so its parent holds every grid point."""
    import multiprocessing.util

    # multiprocessing's own folder (the warm workers' forkserver socket) lives as long as this
    # process: made now, outside tmp/, as an earlier test in the same process would have made it.
    multiprocessing.util.get_temp_dir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "a").mkdir()
    first = run_sweep(_spec(tmp_path / "a", "{loss.terms.cvm.weight: [1.0]}"), SHORT, echo=lambda line: None)
    lines: list[str] = []
    wider = run_sweep(_spec(tmp_path, "{loss.terms.cvm.weight: [1.0, 2.0]}"), SHORT, echo=lines.append)
    assert wider.parent_run_id != first.parent_run_id
    assert [o.status for o in wider.outcomes] == [SKIPPED, FINISHED]
    client = MlflowClient(tracked)
    experiment = client.get_run(wider.parent_run_id).info.experiment_id
    children = client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{wider.parent_run_id}'")
    assert sorted(c.info.run_name for c in children) == ["weight=1.0", "weight=2.0"]
    linked = next(c for c in children if c.info.run_name == "weight=1.0")
    original = client.get_run(first.outcomes[0].run_id)
    assert linked.data.tags["expspec.linked_from"] == original.info.run_id
    assert linked.info.status == "FINISHED" and linked.data.params == original.data.params
    assert linked.data.metrics == original.data.metrics
    assert len(client.get_metric_history(linked.info.run_id, "train/loss")) == \
        len(client.get_metric_history(original.info.run_id, "train/loss"))
    assert original.data.tags["mlflow.parentRunId"] == first.parent_run_id  # the original stays

    def files(run_id: str, path: str | None = None) -> set[str]:
        found = set()
        for item in client.list_artifacts(run_id, path):
            found |= files(run_id, item.path) if item.is_dir else {item.path}
        return found

    # its artifacts too, but the weights (a run with none breaks MLflow's compare view)
    assert files(linked.info.run_id) == {f for f in files(original.info.run_id) if not f.endswith(".ckpt")}
    assert "resolved_spec.yaml" in files(linked.info.run_id)
    assert wider.outcomes[0].run_id == linked.info.run_id
    assert f"[link] weight=1.0: run {original.info.run_id[:8]} linked into this sweep as run {linked.info.run_id[:8]}" \
        " (a copy of its params, metrics, tags and artifacts but weights)" in lines
    assert list((tmp_path / "tmp").iterdir()) == []  # the trials' result and log files are gone


def test_failures_reported_and_summarized(tracked: str, tmp_path: Path) -> None:
    # in_features 5 passes validation but contradicts the data (6 features): the trial fails at build.
    spec = _spec(tmp_path, "{model.in_features: [6, 5]}")
    lines: list[str] = []
    result = run_sweep(spec, SHORT, jobs=1, echo=lines.append)
    assert [o.status for o in result.outcomes] == [FINISHED, FAILED]
    assert "is 5 but the data has in_features = 6" in result.outcomes[1].message
    assert any("in_features=5: FAILED" in line for line in lines)
    assert lines[-2].startswith("summary: 1 finished, 1 failed")
    assert lines[-1].startswith(f"compare: exp compare {result.parent_run_id}   browse: exp ui   (store ")
    client = MlflowClient(tracked)
    assert client.get_run(result.parent_run_id).info.status == "FAILED"
    # every trial's output stays with the parent run, the failed trial's too
    logs = sorted(a.path for a in client.list_artifacts(result.parent_run_id, "trial_logs"))
    assert logs == ["trial_logs/000 in_features=6.log", "trial_logs/001 in_features=5.log"]
    failed_log = client.download_artifacts(result.parent_run_id, logs[1], str(tmp_path))
    assert "is 5 but the data has in_features = 6" in Path(failed_log).read_text()


def test_fail_fast_launches_no_more(tracked: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "{model.in_features: [5, 6, 6], seed: [7, 8, 9]}", kind="zip")
    result = run_sweep(spec, SHORT, jobs=1, fail_fast=True, echo=lambda *_: None)
    assert [o.status for o in result.outcomes] == [FAILED, "NOT RUN", "NOT RUN"]


def test_threads_per_trial_and_an_explicit_value_wins(tracked: str, tmp_path: Path) -> None:
    """The spec's hardware.threads is capped at cores // jobs, so a trial's numbers do not depend
    on --jobs; a value the user's overrides or the sweep's axes give is used as given. Each forked
    trial sets its own torch thread count (the tag is what torch reports inside the run)."""
    client = MlflowClient(tracked)
    spec = _spec(tmp_path, "{hardware.threads: [1, 2]}")
    spec.write_text(spec.read_text() + "hardware: {accelerator: cpu, devices: 1, threads: 2}\n")
    # learning rates no other test of the session uses: a finished trial of the same hash is skipped
    cases = [(["optimizer.lr=0.0011"], 1, "1 job(s) x 2 thread(s);", ["1", "2"]),  # the sweep's axis
             (["optimizer.lr=0.0012", "sweep.grid={seed: [0]}"], 2, "2 job(s) x 1 thread(s);", ["1"]),  # capped
             (["optimizer.lr=0.0013", "sweep.grid={seed: [0]}", "hardware.threads=2"], 2,
              "2 job(s) x 2 thread(s) (as given);", ["2"])]  # the user's override
    for overrides, jobs, line, threads in cases:
        lines: list[str] = []
        result = run_sweep(spec, [*SHORT, *overrides], jobs=jobs, cores=2, echo=lines.append)
        assert line in lines[0]
        runs = [client.get_run(o.run_id) for o in result.outcomes]
        assert [r.data.params["hardware.threads"] for r in runs] == threads
        assert [r.data.tags["expspec.torch_threads"] for r in runs] == threads


def test_forked_and_fresh_process_trials_give_identical_numbers(tracked: str, tmp_path: Path) -> None:
    """The same sweep, trials forked from the warm server vs a fresh interpreter each: the same
    final metrics and the same logged training curve, to the last bit. (`paper` names the MLflow
    experiment, so the second sweep does not skip the first one's finished trials.)"""
    spec = _spec(tmp_path, "{loss.terms.cvm.weight: [0.0, 5.0]}")
    client = MlflowClient(tracked)
    runs = {}
    for isolate in ("fork", "process"):
        result = run_sweep(spec, [*SHORT, "trainer.log_every_n_steps=1", f"paper=sweep_{isolate}"], jobs=2, echo=lambda *_: None, isolate=isolate)
        assert [o.status for o in result.outcomes] == [FINISHED, FINISHED]
        runs[isolate] = result.outcomes
    for forked, fresh in zip(runs["fork"], runs["process"]):
        assert forked.metrics == fresh.metrics and len(forked.metrics) > 10
        curves = [[m.value for m in client.get_metric_history(o.run_id, "train/loss")] for o in (forked, fresh)]
        assert curves[0] == curves[1] and curves[0]


def test_a_killed_or_crashed_trial_ends_only_itself(tracked: str, tmp_path: Path) -> None:
    """The first trial is SIGKILLed while it trains (as the out-of-memory killer would), the second
    raises while building; the sweep goes on and the third finishes. The killed trial's run is
    marked KILLED by the next run started in the experiment (its process is gone)."""
    spec = _spec(tmp_path, "{model.in_features: [6, 5, 6], trainer.max_steps: [20000, 3, 3]}", kind="zip")
    killer = threading.Thread(target=_kill_first_running, args=(tracked,), daemon=True)
    killer.start()
    result = run_sweep(spec, [*SHORT[1:], "trainer.max_epochs=1000"], jobs=1, echo=lambda *_: None)
    killer.join(timeout=5)
    assert [o.status for o in result.outcomes] == [KILLED, FAILED, FINISHED]
    assert result.outcomes[0].message == "killed by SIGKILL (e.g. the out-of-memory killer)"
    assert "is 5 but the data has in_features = 6" in result.outcomes[1].message
    client = MlflowClient(tracked)
    experiment = client.get_experiment_by_name("sweep_test").experiment_id
    [killed] = client.search_runs([experiment], "tags.`mlflow.runName` = 'in_features=6,max_steps=20000'")
    assert killed.info.status == "KILLED" and "ended without closing the run" in killed.data.tags["expspec.error"]


def test_sigterm_to_the_sweep_stops_its_trials_and_marks_runs_killed(tracked: str, tmp_path: Path) -> None:
    """`exp sweep` ended by SIGTERM (a scheduler; Ctrl-C alike): the running forked trial is
    stopped and its run KILLED, the parent run KILLED, exit code 130."""
    spec = _spec(tmp_path, "{trainer.max_steps: [20000, 3]}")
    sweep = subprocess.Popen([sys.executable, "-m", "framework.cli", "sweep", str(spec), "paper=sweep_sigterm",
                              "trainer.max_epochs=1000"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    running = _first_running(tracked, "sweep_sigterm")
    client = MlflowClient(tracked)
    while "train/loss" not in client.get_run(running.info.run_id).data.metrics:  # it trains (logged every 10 steps)
        time.sleep(0.2)
    sweep.send_signal(signal.SIGTERM)
    output = sweep.communicate(timeout=120)[0]
    assert sweep.returncode == 130, output
    parent = client.get_run(running.data.tags["mlflow.parentRunId"])
    assert (client.get_run(running.info.run_id).info.status, parent.info.status) == ("KILLED", "KILLED")


def _first_running(uri: str, paper: str, timeout: float = 600) -> Any:
    """The first RUNNING trial run of experiment `paper` (a run with a parent), once there is one."""
    client = MlflowClient(uri)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        experiment = client.get_experiment_by_name(paper)
        runs = client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'") if experiment else []
        trials = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
        if trials:
            return trials[0]
        time.sleep(0.2)
    raise TimeoutError(f"no trial of {paper} started within {timeout} s")


def _kill_first_running(uri: str, timeout: float = 600) -> None:
    """SIGKILL the process of the first RUNNING trial of experiment sweep_test (the one that trains long)."""
    run = _first_running(uri, "sweep_test", timeout)
    assert run.data.tags["mlflow.runName"].endswith("max_steps=20000")
    os.kill(int(run.data.tags["expspec.pid"]), signal.SIGKILL)


SWEEP_SPECS = [p for p in spec_files([ROOT / "specs"], claims=False) if "\nsweep:" in p.read_text()]


@pytest.mark.parametrize("spec", SWEEP_SPECS, ids=[str(p.relative_to(ROOT / "specs")) for p in SWEEP_SPECS])
def test_planned_hashes_are_the_hashes_each_trial_run_computes(spec: Path) -> None:
    """One-pass planning (committed schema, no torch) gives every trial the hash `exp run` gives it
    (each trial loaded on its own and validated against live signatures): the skip-finished logic
    and the result cache depend on it."""
    trials, hashes, base = plan_trials(spec, [])
    assert len(SWEEP_SPECS) >= 10 and trials
    assert hashes == [plan_hash(prepare(spec, trial.overrides), spec) for trial in trials]
    assert base == prepare(spec, ["sweep=null"])[0].operative


def test_spec_hash_is_the_sha256_of_the_sorted_json_with_or_without_shared_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run identity stored runs are found by: `spec_hash` writes the text section by section
    (reusing, with a `SpecHasher`, sections written before), and it must stay the hash of
    `json.dumps(content, sort_keys=True)` as it always was, for every landed spec's units and each
    sweep trial (sharing section objects with its base), an upstream hash included."""
    import hashlib
    import json

    from framework.loader import load_spec
    from framework.plan import SweepChecker, validate_plan
    from framework.schema import CommittedSchemas
    from framework import spec
    from framework.spec import SpecHasher, spec_hash

    def reference(operative: dict[str, Any], upstream: str | None = None) -> str:
        content = {k: v for k, v in operative.items() if k not in ("tracking", "name", "description", "sweep")}
        if "hardware" in content:
            content["hardware"] = {k: v for k, v in content["hardware"].items() if k != "threads"}
        if upstream:
            content["init"] = upstream
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]

    schemas, hasher = CommittedSchemas(), SpecHasher()
    operatives = []
    for path in spec_files([ROOT / "specs"], claims=False):
        operatives += [u.operative for u in validate_plan(load_spec(path), schemas)]
    for path in SWEEP_SPECS[:4]:
        checker = SweepChecker(path, [], schemas)
        operatives += [u.operative for trial in checker.trials[:6] for u in checker.units(trial)]
    assert len(operatives) > 250
    for operative in operatives:
        for upstream in (None, "0123456789abcdef"):
            expected = reference(operative, upstream)
            assert spec_hash(operative, upstream) == expected
            assert hasher.hash(operative, upstream) == expected
    expected = [reference(operative) for operative in operatives]
    written: list[Any] = []
    real = spec.json.dumps
    monkeypatch.setattr(spec.json, "dumps", lambda *a, **k: written.append(a) or real(*a, **k))
    assert [hasher.hash(operative) for operative in operatives] == expected  # every section's text reused
    assert written == []


def test_a_failed_trials_message_is_its_error_line_not_the_hint_after_it(tmp_path: Path) -> None:
    """`exp run` prints a hint after an unexpected error ("the MLflow run ... --traceback"); the
    trial's message, which `exp sweep` and the queue show, is the error itself."""
    from framework.plan import named_trial
    from framework.trial_launchers import TrialLauncher

    class Printed(TrialLauncher):
        def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> Path:
            log_file.write_text("epoch 0: 40%\nerror: MlflowException: API request to http://store failed\n"
                                "  (the MLflow run, if one was started, is marked FAILED with error.txt; "
                                "--traceback shows the full traceback)\n")
            return log_file

        def wait(self, handle: Path) -> int:
            return 1

    outcome = Printed(tmp_path / "spec.yaml", [], "parent", "sweep", 1).run(0, named_trial({"seed": 1}))
    assert (outcome.status, outcome.message) == (FAILED, "error: MlflowException: API request to http://store failed")
