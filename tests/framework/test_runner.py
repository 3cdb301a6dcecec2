"""framework/runner.py + tracking.py: what an MLflow run carries, and that no run is left RUNNING."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from framework.errors import SpecError
from framework.runner import run
from framework.tracking import Tracker, flatten, readme_title, run_name_for

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"
SHORT = ["trainer.max_steps=4", "trainer.log_every_n_steps=1", "trainer.limit_val_batches=1", "trainer.limit_test_batches=2"]


def test_finished_run_carries_params_tags_artifact_metrics(tracked: str) -> None:
    result = run(TINY, SHORT)
    client = MlflowClient(tracked)
    info = client.get_run(result.run_id)
    assert info.info.status == "FINISHED"
    assert client.get_experiment(info.info.experiment_id).name == "cvm_fairness"
    params = info.data.params
    assert params["optimizer.lr"] == "0.01"
    assert params["model.activation"] == "relu"  # a default, filled in
    assert params["loss.terms.cvm.type"] == "cvm_dependence" and params["loss.terms.cvm.weight"] == "10.0"
    assert params["trainer.max_steps"] == "4"
    assert "name" not in params and "description" not in params  # bookkeeping: tags
    tags = info.data.tags
    assert tags["expspec.name"] == "cvm-tiny"
    assert info.info.run_name.startswith("cvm-tiny max_steps=4 log_every_n_steps=1")  # what differs
    experiment = client.get_experiment(info.info.experiment_id).tags
    assert experiment["mlflow.note.content"] == readme_title(TINY) != ""
    assert experiment["mlflow.experimentKind"] == "custom_model_development"
    assert len(tags["expspec.spec_hash"]) == 16
    assert tags["expspec.spec_path"].endswith("specs/cvm_fairness/tiny.yaml")
    assert tags["expspec.overrides"] == " ".join(SHORT)
    assert tags["expspec.version.torch"].startswith("2.")
    if "mlflow.source.git.commit" in tags:
        assert tags["expspec.git_dirty"] in ("true", "false")
    artifact = client.download_artifacts(result.run_id, "resolved_spec.yaml")
    assert yaml.safe_load(Path(artifact).read_text()) == result.operative
    history = client.get_metric_history(result.run_id, "train/loss")
    assert len(history) >= 1 and all(math.isfinite(m.value) for m in history)
    assert 0.0 <= info.data.metrics["test/accuracy"] <= 1.0
    assert "test/demographic_parity_gap" in info.data.metrics
    assert "epoch" not in info.data.metrics  # bookkeeping: the metrics are those the spec names


def test_same_seed_same_numbers(tracked: str) -> None:
    first, second = run(TINY, SHORT), run(TINY, SHORT)
    assert first.metrics == second.metrics


def test_run_that_raises_is_failed(tracked: str) -> None:
    # cvm_dependence needs a 'group' column; synthetic_classification has none: fails in training.
    overrides = [*SHORT, "data={type: synthetic_classification, n_features: 6}"]
    with pytest.raises(Exception) as info:
        run(TINY, overrides)
    client = MlflowClient(tracked)
    runs = client.search_runs([client.get_experiment_by_name("cvm_fairness").experiment_id],
                              order_by=["attributes.start_time DESC"], max_results=1)
    assert runs[0].info.status == "FAILED"
    assert "group" in runs[0].data.tags["expspec.error"]
    assert "group" in str(info.value)
    Path(client.download_artifacts(runs[0].info.run_id, "error.txt")).read_text().index("Traceback")


def test_data_size_mismatch_is_a_located_spec_error(tracked: str) -> None:
    with pytest.raises(SpecError) as info:
        run(TINY, [*SHORT, "model.in_features=5"])
    assert str(info.value.problems[0]) == (
        "override 'model.in_features=5': model.in_features: is 5 but the data has in_features = 6"
    )


def test_flatten() -> None:
    assert flatten({"a": {"b": [1, 2], "c": None}, "n": [{"type": "x"}], "e": {}}) == {
        "a.b": "[1, 2]", "a.c": "null", "n.0.type": "x", "e": "{}",
    }


@pytest.mark.parametrize(("overrides", "name"), [
    ([], "demo"),
    (["optimizer.lr=0.001"], "demo lr=0.001"),
    (["optimizer.lr=0.001", "seed=1"], "demo lr=0.001 seed=1"),
    (["name=other", "description=why"], "demo"),  # the name says it
    (["model={type: mlp, in_features: 6, hidden: [32, 32], out_features: 2}"], "demo model={type: mlp, in_features: 6, hidde…"),
])
def test_run_name_for(overrides: list[str], name: str) -> None:
    assert run_name_for("demo", overrides) == name


def test_readme_title(tmp_path: Path) -> None:
    (tmp_path / "paper").mkdir()
    (tmp_path / "README.md").write_text("# demo: a paper in one line\n\nmore\n")
    assert readme_title(tmp_path / "paper" / "a.yaml") == "demo: a paper in one line"
    assert readme_title(ROOT / "specs/cvm_fairness/tiny.yaml").startswith("cvm_fairness: group fairness")


def test_top_level_run_names_differ_when_the_specs_differ(tracked: str) -> None:
    """A short spec hash joins the name once the experiment has a top-level run of that name
    with another hash; the same spec keeps its name; a stage is named by its stage."""
    op = {"name": "names-demo", "paper": "run_names", "description": "", "tracking": {"uri": None}}

    def started(spec_hash: str, overrides: list[str] = [], parent: str | None = None) -> str:
        tracker = Tracker(op if parent is None else {**op, "name": "names-demo/train"}, "demo.yaml", spec_hash,
                          overrides, parent_run_id=parent)
        tracker.start(log_params=False)
        tracker.finish()
        return MlflowClient(tracked).get_run(tracker.run_id).info.run_name

    first = started("aaaaaa1111111111")
    assert first == "names-demo"
    assert started("bbbbbb2222222222") == "names-demo #bbbbbb"
    assert started("aaaaaa1111111111") == "names-demo"  # the same spec, run again
    assert started("cccccc3333333333", ["optimizer.lr=0.1"]) == "names-demo lr=0.1"
    parent = MlflowClient(tracked).search_runs([MlflowClient(tracked).get_experiment_by_name("run_names").experiment_id],
                                               max_results=1)[0].info.run_id
    assert started("dddddd4444444444", [], parent) == "train"


def test_regression_without_metrics_reports_mae_rmse_r2(tracked: str, tmp_path: Path) -> None:
    """What a first regression spec reports with no `metrics:` written: MAE, RMSE and R^2 (test
    split), from torchmetrics, next to the loss."""
    spec = tmp_path / "regression.yaml"
    spec.write_text("name: first-regression\npaper: scratch\ntask: {type: regression}\n"
                    "data: {type: synthetic_regression, n_samples: 300, n_features: 4, batch_size: 50}\n"
                    "model: {type: mlp, in_features: 4, out_features: 1}\nloss: {type: mse}\n"
                    "optimizer: {type: adam, lr: 0.01}\nhardware: {accelerator: cpu, devices: 1, threads: 1}\n"
                    "trainer: {max_steps: 20}\n")
    result = run(spec)
    assert {"test/mae", "test/rmse", "test/r2"} <= set(result.metrics)
    assert result.metrics["test/rmse"] >= result.metrics["test/mae"] > 0  # RMSE >= MAE always
