"""framework/queue.py: one sweep, two worker processes on one Optuna queue (a journal file, and a
real PostgreSQL server on localhost), each in a working directory of its own (its own local
cache and Lightning files), standing in for two machines sharing an MLflow store.

Needs optuna (and psycopg2 + PostgreSQL for the server case): the tests skip, saying what is
missing, and fail instead under EXPSPEC_CI=1 (`.ci/run` installs them)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from services import missing_postgres, postgres, require

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("queue")  # one PostgreSQL server for the module


def _missing(module: str) -> str | None:
    try:
        __import__(module)
    except ImportError:
        return f"{module} is not installed (pip install -e '.[distributed]')"
    return None


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    require(_missing("optuna") or missing_postgres())
    with postgres() as url:
        yield url


@pytest.fixture(params=["journal", "postgresql"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    require(_missing("optuna"))
    if request.param == "journal":
        return f"journal:{tmp_path / 'queue.log'}"
    return request.getfixturevalue("postgres_url")


def _sweep(tmp_path: Path, values: list[float], steps: int) -> Path:
    """A sweep of the tiny cvm spec; its seed follows the test's folder, so that no two tests share
    a spec hash in the session's MLflow store (a finished hash is skipped)."""
    path = tmp_path / "sweep.yaml"
    path.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: queue-test\n"
                    f"seed: {zlib.crc32(tmp_path.name.encode()) % 100_000}\npaper: queue_test\ntrainer: {{max_steps: {steps}, limit_val_batches: 1, limit_test_batches: 1}}\n"
                    f"sweep:\n  grid: {{loss.terms.cvm.weight: {values}}}\n")
    return path


def _worker(spec: Path, queue: str, home: Path, *extra: str) -> subprocess.Popen:
    """`exp sweep SPEC --queue URL` in a working directory of its own (a machine), in a process
    group of its own (a machine's death kills all of it)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "EXPSPEC_CACHE_DIR": str(home / "cache"), "EXPSPEC_RUNS_DIR": str(home / "runs"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "framework.cli", "sweep", str(spec), "--queue", queue, *extra],
                            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _finish(process: subprocess.Popen, timeout: float = 300) -> str:
    try:
        return process.communicate(timeout=timeout)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _runs(client: MlflowClient, parent: str) -> list:
    experiment = client.get_run(parent).info.experiment_id
    return client.search_runs([experiment], f"tags.`mlflow.parentRunId` = '{parent}'")


def _study(queue: str, output: str) -> object:
    """The Optuna study the worker's first line names."""
    import optuna

    from framework.queue import open_storage

    name = re.search(r" in study (\S+) ", output).group(1)
    return optuna.load_study(study_name=name, storage=open_storage(queue))


def test_two_workers_run_each_trial_once_under_one_parent(tracked: str, tmp_path: Path, queue_url: str) -> None:
    spec = _sweep(tmp_path, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], steps=40)
    workers = [_worker(spec, queue_url, tmp_path / f"machine{i}") for i in (1, 2)]
    outputs = [_finish(w) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], "\n".join(outputs)
    study = _study(queue_url, outputs[0])
    assert sorted(t.state.name for t in study.trials) == ["COMPLETE"] * 6
    assert sorted(t.user_attrs["expspec.index"] for t in study.trials) == list(range(6))
    parent = study.user_attrs["expspec.parent_run_id"]
    client = MlflowClient(tracked)
    children = _runs(client, parent)
    assert sorted(c.data.params["loss.terms.cvm.weight"] for c in children) == ["0.0", "1.0", "2.0", "3.0", "4.0", "5.0"]
    assert {c.info.status for c in children} == {"FINISHED"}
    assert {c.info.run_id for c in children} == {t.user_attrs["expspec.run_id"] for t in study.trials}
    by_worker = {c.data.tags["expspec.queue.worker"] for c in children}
    assert len(by_worker) == 2, f"one worker did every trial: {by_worker}"
    assert client.get_run(parent).info.status == "FINISHED"
    assert all(f"parent run {parent}" in out for out in outputs)


def test_a_killed_workers_trial_is_finished_by_the_other(tracked: str, tmp_path: Path, queue_url: str) -> None:
    spec = _sweep(tmp_path, [0.0, 1.0], steps=60)
    first = _worker(spec, queue_url, tmp_path / "machine1", "--lease", "4")
    client = MlflowClient(tracked)
    deadline = time.monotonic() + 240
    running = []
    while not running and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.3)
        experiment = client.get_experiment_by_name("queue_test")
        if experiment:
            running = [r for r in client.search_runs([experiment.experiment_id], "attributes.status = 'RUNNING'")
                       if "expspec.queue.study" in r.data.tags and r.data.tags["expspec.spec_path"] == str(spec)]
    assert running, _finish(first)
    os.killpg(first.pid, signal.SIGKILL)  # the machine dies mid-trial: worker, warm server and trial
    first.wait()
    second = _worker(spec, queue_url, tmp_path / "machine2", "--lease", "4")
    output = _finish(second)
    assert second.returncode == 0, output
    assert "lost its lease" in output
    study = _study(queue_url, output)
    states = sorted((t.user_attrs["expspec.index"], t.state.name) for t in study.trials)
    lost = [t for t in study.trials if t.state.name == "FAIL"]
    assert len(lost) == 1 and lost[0].user_attrs["expspec.error"].startswith("lease lost")
    assert states == sorted([(0, "COMPLETE"), (1, "COMPLETE"), (lost[0].user_attrs["expspec.index"], "FAIL")])
    parent = study.user_attrs["expspec.parent_run_id"]
    children = _runs(client, parent)
    finished = sorted(c.data.params["loss.terms.cvm.weight"] for c in children if c.info.status == "FINISHED")
    assert finished == ["0.0", "1.0"]  # each trial finished exactly once
    killed = client.get_run(running[0].info.run_id)  # closed by the re-issue, or as an orphan of this host
    assert killed.info.status == "KILLED" and killed.data.tags["expspec.error"]
    assert client.get_run(parent).info.status == "FINISHED"


def test_a_sqlite_queue_is_refused(tmp_path: Path) -> None:
    require(_missing("optuna"))
    from framework.cli import main

    spec = _sweep(tmp_path, [0.0], steps=1)
    assert main(["sweep", str(spec), "--queue", f"sqlite:///{tmp_path / 'q.db'}"]) == 2


def test_an_optuna_search_draws_reports_and_records_each_trial(tracked: str, tmp_path: Path) -> None:
    """`sweep: {optuna: ...}` without --queue: one worker on a journal beside the result cache;
    each trial's drawn values are its run's params, its metric the trial's value, and the metric
    at each validation reaches Optuna (what a pruner reads)."""
    require(_missing("optuna"))
    spec = tmp_path / "search.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: search-test\npaper: queue_test\n"
                    "trainer: {max_steps: 10, val_check_interval: 5, limit_val_batches: 1, limit_test_batches: 1}\n"
                    "sweep:\n  optuna:\n    trials: 3\n    metric: val/loss\n    sampler: random\n    pruner: median\n"
                    "    params:\n      optimizer.lr: {distribution: log_uniform, low: 1.0e-3, high: 1.0e-1}\n"
                    "      loss.terms.cvm.weight: {distribution: choice, values: [0.0, 2.0]}\n")
    home = tmp_path / "machine"
    worker = subprocess.Popen([sys.executable, "-m", "framework.cli", "sweep", str(spec)], cwd=tmp_path,
                              env={**os.environ, "EXPSPEC_CACHE_DIR": str(home / "cache"),
                                   "EXPSPEC_RUNS_DIR": str(home / "runs")},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output = _finish(worker)
    assert worker.returncode == 0, output
    study = _study(f"journal:{home / 'optuna.journal'}", output)
    client = MlflowClient(tracked)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    for trial in study.trials:
        run = client.get_run(trial.user_attrs["expspec.run_id"])
        assert run.data.tags["mlflow.parentRunId"] == study.user_attrs["expspec.parent_run_id"]
        assert float(run.data.params["optimizer.lr"]) == pytest.approx(trial.params["optimizer.lr"])
        assert float(run.data.params["loss.terms.cvm.weight"]) == trial.params["loss.terms.cvm.weight"]
        assert trial.value == pytest.approx(run.data.metrics["val/loss"])
        assert sorted(trial.intermediate_values) == [5, 10]  # reported at each validation
    best = min(study.trials, key=lambda t: t.value)
    parent = client.get_run(study.user_attrs["expspec.parent_run_id"])
    assert parent.data.tags["expspec.best_run_id"] == best.user_attrs["expspec.run_id"]
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["expspec.sweep_objective"] == "val/loss"  # exp ui shows it first
    # Optuna's fANOVA importances (seeded: recomputed alike) and its two plots, on the parent
    from framework.search_report import importances, logged_importances

    logged = logged_importances(parent.data.metrics)
    assert logged == pytest.approx(importances(study)) and set(logged) == {"optimizer.lr", "loss.terms.cvm.weight"}
    assert sum(logged.values()) == pytest.approx(1.0)
    plots = {a.path: a.file_size for a in client.list_artifacts(parent.info.run_id, "search")}
    assert set(plots) == {"search/param_importances.png", "search/optimization_history.png"}
    assert all(5_000 < size < 100_000 for size in plots.values()), plots
    compared = subprocess.run([sys.executable, "-m", "framework.cli", "compare", parent.info.run_id, "--no-log"],
                              cwd=tmp_path, capture_output=True, text=True, env={**os.environ})
    assert compared.returncode == 0, compared.stderr
    assert f"parameter importances of {parent.info.run_name} (fANOVA, Optuna): " in compared.stderr


def test_optuna_is_written_alone(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from framework.cli import main

    spec = tmp_path / "bad.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nsweep:\n  seeds: [0, 1]\n  optuna:\n"
                    "    trials: 2\n    metric: val/loss\n    params: {optimizer.lr: {distribution: uniform, low: 0.1, high: 0.2}}\n")
    assert main(["validate", str(spec)]) == 2
    assert "bad.yaml:3:3: sweep: optuna draws every trial itself: write it alone, without grid, zip, random or " \
           "seeds" in capsys.readouterr().err


def test_a_missing_extra_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from framework.cli import main

    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed: importing it raises ImportError
    spec = _sweep(tmp_path, [0.0], steps=1)
    assert main(["sweep", str(spec), "--queue", f"journal:{tmp_path / 'q.log'}"]) == 2
    assert capsys.readouterr().err.strip() == \
        "error: this command needs `optuna`, which comes with the optional extra 'distributed': pip install 'expspec[distributed]'"


def test_show_says_a_search_is_drawn_as_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from framework.cli import main

    spec = tmp_path / "search.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nsweep:\n  optuna:\n    trials: 5\n"
                    "    metric: val/loss\n    params:\n      optimizer.lr: {distribution: log_uniform, low: 1.0e-3, high: 0.1}\n"
                    "      trainer.max_steps: {distribution: int_uniform, low: 10, high: 20}\n")
    assert main(["show", str(spec)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == ("# sweep: an optuna search of 5 trial(s), drawn as they run; "
                                                        "the ends of its ranges: lr=0.001,max_steps=10; lr=0.1,max_steps=20")
