"""framework/invocation.py: the run context a command reads at its edge, passes to the runner and
the tracker, and writes as environment variables only for a process it starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

from framework.invocation import RunContext, child_environ, current, use
from framework.result_cache import cache_dir
from framework.runner import runs_dir
from framework.tracking import tracking_uri


def test_a_context_read_from_an_environment_and_written_back_is_the_same() -> None:
    env = {"MLFLOW_TRACKING_URI": "sqlite:///x.db", "EXPSPEC_CACHE_DIR": "/c", "EXPSPEC_RUNS_DIR": "/r",
           "EXPSPEC_PARENT_RUN_ID": "p1", "EXPSPEC_RUN_NAME": "lr=0.1", "EXPSPEC_RUN_TAGS": json.dumps({"a": "1"}),
           "EXPSPEC_RERUN_OF": "r0", "EXPSPEC_RESULT_FILE": "/t/0.json", "EXPSPEC_OPTUNA_TRIAL": "{}"}
    context = RunContext.from_environ(env)
    assert context == RunContext("sqlite:///x.db", Path("/c"), Path("/r"), "p1", "lr=0.1", {"a": "1"}, "r0",
                                 "/t/0.json", "{}")
    assert RunContext.from_environ(child_environ(context, base={})) == context


def test_a_trial_gets_its_own_handoffs_only() -> None:
    parent_env = {"PATH": "/bin", "EXPSPEC_RUN_NAME": "mine", "EXPSPEC_RUN_ID": "r", "EXPSPEC_RUN_TAGS": "{}",
                  "MLFLOW_TRACKING_URI": "sqlite:///old.db"}
    env = child_environ(RunContext(parent_run_id="p"), base=parent_env)
    assert env["PATH"] == "/bin" and env["EXPSPEC_PARENT_RUN_ID"] == "p"
    assert not {"EXPSPEC_RUN_NAME", "EXPSPEC_RUN_ID", "EXPSPEC_RUN_TAGS", "MLFLOW_TRACKING_URI"} & set(env)
    assert RunContext(parent_run_id="p", run_name="n", run_tags={"a": "b"}).for_other_run() == RunContext()


def test_the_active_context_names_the_stores_and_nothing_is_left_after(tmp_path: Path) -> None:
    before = dict(os.environ)
    outer = current()
    with use(RunContext(tracking_uri="sqlite:///elsewhere.db", cache_dir=tmp_path / "c", runs_dir=tmp_path / "r")):
        assert (tracking_uri(), cache_dir(), runs_dir()) == ("sqlite:///elsewhere.db", tmp_path / "c", tmp_path / "r")
        assert tracking_uri("sqlite:///spec.db") == "sqlite:///spec.db"  # a spec's own store wins
    assert current() == outer
    assert dict(os.environ) == before


def test_a_run_in_a_store_of_its_own_leaves_the_environment_alone(tracked: str, tmp_path: Path) -> None:
    """A spec's own `tracking.uri` is that run's store only: Lightning's MLflow logger would set
    MLflow's process-wide URI and $MLFLOW_TRACKING_URI to it (framework/mlflow_logger.py)."""
    from mlflow.tracking import MlflowClient

    from framework.runner import run

    def ours() -> dict[str, str]:  # (Lightning's seeding sets PL_GLOBAL_SEED and others for its own ranks)
        return {k: v for k, v in os.environ.items() if k.startswith(("MLFLOW_", "EXPSPEC_"))}

    own = f"sqlite:///{tmp_path / 'own.db'}"
    before = ours()
    done = run(Path(__file__).resolve().parents[2] / "specs/cvm_fairness/tiny.yaml",
               ["trainer.max_steps=2", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1",
                f"tracking.uri={own}"])
    assert MlflowClient(own).get_run(done.run_id).info.status == "FINISHED"
    assert ours() == before and tracking_uri() == tracked


def test_a_trial_runs_with_mlflow_telemetry_off_unless_the_user_says_otherwise() -> None:
    """MLflow's telemetry thread deletes a variable from os.environ while the metrics thread reads
    it (framework/invocation.py, `no_mlflow_telemetry`): trials start with it off; a user's own
    MLFLOW_DISABLE_TELEMETRY wins."""

    context = RunContext.from_environ({})
    assert child_environ(context, base={})["MLFLOW_DISABLE_TELEMETRY"] == "true"
    assert child_environ(context, base={"MLFLOW_DISABLE_TELEMETRY": "false"})["MLFLOW_DISABLE_TELEMETRY"] == "false"
