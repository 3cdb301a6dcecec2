"""Starting from trained weights (`init`, strict or not) and what a mistake in a spec leaves
behind: a spec error in run, sweep, resume or rerun exits 2 and creates no MLflow run (reproduce:
tests/framework/test_claims.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from framework.cli import main
from framework.errors import SpecError
from framework.runner import run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"
SHORT = ["trainer.max_steps=3", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]
# Pretrain on 2 classes, fine-tune on 3: the hidden layer fits, the head (net.2) does not.
STAGED = """\
name: finetune-demo
paper: init_demo
task: {type: classification}
data: {type: synthetic_classification, n_features: 6, n_classes: 2, batch_size: 64}
model: {type: mlp, in_features: 6, hidden: [16], out_features: 2}
loss: {type: cross_entropy}
optimizer: {type: adam, lr: 0.01}
hardware: {accelerator: cpu}
trainer: {max_steps: 3, limit_val_batches: 1, limit_test_batches: 1}
stages:
  pretrain: {}
  finetune:
    init: {stage: pretrain, strict: %s}
    data: {n_classes: 3}
    model: {out_features: 3}
"""


def _spec(tmp_path: Path, strict: str) -> Path:
    path = tmp_path / "staged.yaml"
    path.write_text(STAGED % strict)
    return path


def _all_runs(client: MlflowClient) -> list[str]:
    experiments = [e.experiment_id for e in client.search_experiments()]
    return sorted(r.info.run_id for r in client.search_runs(experiments, max_results=10_000))


def test_strict_false_loads_what_matches_and_says_what_it_skipped(tracked: str, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    result = run(_spec(tmp_path, "false"))
    finetune = result.stages["finetune"]
    skipped = MlflowClient(tracked).get_run(finetune.run_id).data.tags["expspec.init_skipped"]
    assert skipped == ("net.2.weight (shape (2, 16) in the checkpoint, (3, 16) in the model), "
                       "net.2.bias (shape (2,) in the checkpoint, (3,) in the model)")
    assert "init: loaded 2 of 4 tensors of the model from " in caplog.text
    assert "expspec.init_skipped" not in MlflowClient(tracked).get_run(result.stages["pretrain"].run_id).data.tags
    import torch

    pretrained = torch.load(result.stages["pretrain"].checkpoint, weights_only=True)["state_dict"]
    # the hidden layer started from the pretrained one: 3 fine-tuning steps move it a little, not away
    tuned = torch.load(finetune.checkpoint, weights_only=True)["state_dict"]
    assert (tuned["model.net.0.weight"] - pretrained["model.net.0.weight"]).abs().max() < 0.05


def test_strict_true_mismatch_is_a_located_error_naming_the_tensors(tracked: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "true")
    with pytest.raises(SpecError) as info:
        run(spec)
    (problem,) = info.value.problems
    assert str(problem.mark) == f"{spec}:13:37"  # the `strict: true` it asks to change
    assert problem.path == ("stages", "finetune", "init")
    assert "do not fit the model: net.2.weight (shape (2, 16) in the checkpoint, (3, 16) in the model); " \
           "net.2.bias (shape (2,) in the checkpoint, (3,) in the model). With `init.strict: false`" in problem.message


def _broken_stored_spec(client: MlflowClient, run_id: str) -> None:
    """Make a run's stored resolved_spec.yaml invalid (as a spec written for an older version)."""
    artifact = Path(client.download_artifacts(run_id, "resolved_spec.yaml"))
    source = Path(client.get_run(run_id).info.artifact_uri.removeprefix("file://")) / "resolved_spec.yaml"
    spec = yaml.safe_load(artifact.read_text())
    spec["optimizer"]["lr"] = "fast"
    source.write_text(yaml.safe_dump(spec))


def test_a_spec_error_exits_2_and_creates_no_run(tracked: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    client = MlflowClient(tracked)
    done = run(TINY, SHORT)
    before = _all_runs(client)
    assert main(["run", str(TINY), *SHORT, "model.in_features=5"]) == 2  # found while building: data has 6
    assert main(["run", str(TINY), "optimizer.lr=fast"]) == 2
    assert main(["sweep", str(TINY), "optimizer.lr=fast"]) == 2
    _broken_stored_spec(client, done.run_id)
    assert main(["rerun", done.run_id]) == 2
    assert main(["resume", done.run_id]) == 2
    assert "optimizer.lr: expected a number" in capsys.readouterr().err
    assert _all_runs(client) == before
    assert client.get_run(done.run_id).info.status == "FINISHED"
