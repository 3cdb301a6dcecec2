"""Stages and init: an evaluation stage that loads the trained stage's weights reproduces its test
metrics exactly; `init: {spec: ...}` reuses a cached finished run instead of retraining."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlflow.tracking import MlflowClient

from framework.runner import run

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "specs/cvm_fairness/tiny.yaml"

STAGED = f"""\
extends: {TINY}
name: staged
loss: {{type: cross_entropy}}
trainer: {{max_steps: 30, limit_val_batches: 1}}
stages:
  train: {{}}
  evaluate:
    init: {{stage: train}}
    phases: [test]
  fresh:
    phases: [test]
"""


def test_stages_are_children_and_init_loads_weights(tracked: str, tmp_path: Path) -> None:
    spec = tmp_path / "staged.yaml"
    spec.write_text(STAGED)
    result = run(spec)
    assert list(result.stages) == ["train", "evaluate", "fresh"]
    trained, evaluated, fresh = (result.stages[s].metrics["test/accuracy"] for s in ("train", "evaluate", "fresh"))
    assert evaluated == trained  # the same weights give the same test metrics
    assert fresh != trained  # an untrained model does not
    client = MlflowClient(tracked)
    for stage in result.stages.values():
        assert client.get_run(stage.run_id).data.tags["mlflow.parentRunId"] == result.run_id
    parent = client.get_run(result.run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags["expspec.stages"] == "train,evaluate,fresh"
    assert result.metrics["evaluate:test/accuracy"] == evaluated
    # the parent run in MLflow holds the same keys as the result (stage:split/name, one spelling)
    assert parent.data.metrics["evaluate:test/accuracy"] == evaluated
    assert not any(key.startswith("evaluate/") for key in parent.data.metrics)


def test_init_from_spec_reuses_the_cached_run(tracked: str, tmp_path: Path) -> None:
    pretrain = tmp_path / "pretrain.yaml"
    pretrain.write_text(f"extends: {TINY}\nname: pretrain\nloss: {{type: cross_entropy}}\nmodel: {{dropout: 0.3}}\n"
                        "trainer: {max_steps: 20, limit_val_batches: 1}\n")
    finetune = tmp_path / "finetune.yaml"
    # dropout draws from the global RNG while fine-tuning: equal metrics below mean the run is
    # seeded after its upstream ran in this process, not before
    finetune.write_text(f"extends: {TINY}\nname: finetune\ninit: {{spec: pretrain.yaml}}\nmodel: {{dropout: 0.3}}\n"
                        "trainer: {max_steps: 5, limit_val_batches: 1}\n")
    client = MlflowClient(tracked)

    def pretrain_runs() -> int:
        experiment = client.get_experiment_by_name("cvm_fairness")
        return len(client.search_runs([experiment.experiment_id], "tags.`expspec.name` = 'pretrain'"))

    before = pretrain_runs() if client.get_experiment_by_name("cvm_fairness") else 0
    first = run(finetune)
    assert pretrain_runs() == before + 1  # the upstream spec ran first
    second = run(finetune)
    assert pretrain_runs() == before + 1  # and was reused from the cache the second time
    assert first.metrics == second.metrics  # whether the upstream ran first or came from the cache
    tags = client.get_run(first.run_id).data.tags
    assert tags["expspec.init_checkpoint"].endswith("final.ckpt")


def test_init_overrides_give_each_seed_its_own_upstream(tracked: str, tmp_path: Path) -> None:
    """`init: {spec, overrides: ['seed=${seed}']}`: seeds 0 and 1 load two upstream runs (two
    cache entries, two hashes); seed 0 again reuses its upstream."""
    from framework.result_cache import cache_dir
    from framework.runner import plan_hash, prepare

    pretrain = tmp_path / "pretrain.yaml"
    pretrain.write_text(f"extends: {TINY}\nname: pretrain_seeded\nloss: {{type: cross_entropy}}\n"
                        "trainer: {max_steps: 10, limit_val_batches: 1}\n")
    finetune = tmp_path / "finetune.yaml"
    finetune.write_text(f"extends: {TINY}\nname: finetune_seeded\n"
                        "init: {spec: pretrain.yaml, overrides: ['seed=${seed}']}\n"
                        "trainer: {max_steps: 3, limit_val_batches: 1}\n")
    client = MlflowClient(tracked)

    def pretrain_runs() -> int:
        experiment = client.get_experiment_by_name("cvm_fairness")
        return len(client.search_runs([experiment.experiment_id], "tags.`expspec.name` = 'pretrain_seeded'"))

    seed0, seed1 = run(finetune, ["seed=0"]), run(finetune, ["seed=1"])
    upstreams = [plan_hash(prepare(pretrain, [f"seed={s}"]), pretrain) for s in (0, 1)]
    assert upstreams[0] != upstreams[1]
    assert all((cache_dir() / h / "result.json").is_file() for h in upstreams)
    assert pretrain_runs() == 2
    checkpoints = [client.get_run(r.run_id).data.tags["expspec.init_checkpoint"] for r in (seed0, seed1)]
    assert checkpoints[0] != checkpoints[1]
    again = run(finetune, ["seed=0"])
    assert pretrain_runs() == 2  # seed 0's upstream came from the cache
    assert client.get_run(again.run_id).data.tags["expspec.init_checkpoint"] == checkpoints[0]
    assert again.metrics == seed0.metrics


def _store_runs(client: MlflowClient) -> int:
    return sum(len(client.search_runs([e.experiment_id])) for e in client.search_experiments())


def test_a_later_stage_with_missing_data_stops_before_the_first_stage_trains(tracked: str, tmp_path: Path) -> None:
    """preflight: the last stage names a data file that does not exist; the command stops with
    the component's located message before stage `train` runs, and no run is left in the store."""
    spec = tmp_path / "staged.yaml"
    spec.write_text(STAGED + "    data: {type: instruction_jsonl, path: no_such.jsonl, tokenizer: no_such_dir}\n")
    client = MlflowClient(tracked)
    before = _store_runs(client)
    with pytest.raises(FileNotFoundError) as caught:
        run(spec)
    assert "instruction_jsonl: instruction file (.jsonl) not found (data.path = no_such.jsonl)" in str(caught.value)
    assert any("staged.yaml:" in note and "data: while building data" in note for note in caught.value.__notes__)
    assert _store_runs(client) == before


def test_init_spec_with_missing_data_stops_before_its_upstream_trains(tracked: str, tmp_path: Path) -> None:
    (tmp_path / "pretrain.yaml").write_text(f"extends: {TINY}\nname: pretrain_unused\nloss: {{type: cross_entropy}}\n"
                                            "trainer: {max_steps: 20, limit_val_batches: 1}\n")
    finetune = tmp_path / "finetune.yaml"
    finetune.write_text(f"extends: {TINY}\nname: finetune\ninit: {{spec: pretrain.yaml}}\n"
                        "data: {type: instruction_jsonl, path: no_such.jsonl, tokenizer: no_such_dir}\n")
    client = MlflowClient(tracked)
    before = _store_runs(client)
    with pytest.raises(FileNotFoundError, match="instruction_jsonl: instruction file"):
        run(finetune)
    assert _store_runs(client) == before  # the upstream did not run
