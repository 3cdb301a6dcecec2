"""framework/plan.py: sweep expansion and stage splitting, with located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.loader import load_spec, parse_yaml
from framework.plan import expand_sweep, validate_plan
from framework.schema import CommittedSchemas

BASE = """\
name: t
paper: demo
task: {type: classification}
data: {type: synthetic_classification, n_features: 4}
model: {type: mlp, in_features: 4, out_features: 2}
loss: {type: cross_entropy}
optimizer: {type: adam, lr: 1.0e-3}
"""


@pytest.mark.parametrize(
    "sweep, names, overrides",
    [
        ("grid: {optimizer.lr: [0.1, 0.01], model.dropout: [0.0, 0.5]}",
         ["lr=0.1,dropout=0.0", "lr=0.1,dropout=0.5", "lr=0.01,dropout=0.0", "lr=0.01,dropout=0.5"],
         ["sweep=null", "optimizer.lr=0.1", "model.dropout=0.0"]),
        ("zip: {optimizer.lr: [0.1, 0.01], trainer.max_epochs: [1, 2]}",
         ["lr=0.1,max_epochs=1", "lr=0.01,max_epochs=2"],
         ["sweep=null", "optimizer.lr=0.1", "trainer.max_epochs=1"]),
        ("{grid: {optimizer.lr: [0.1]}, seeds: [0, 1]}", ["lr=0.1,seed=0", "lr=0.1,seed=1"],
         ["sweep=null", "optimizer.lr=0.1", "seed=0"]),
        ("grid: {model.hidden: [[8], [8, 8]]}", ["hidden=[8]", "hidden=[8, 8]"],
         ["sweep=null", "model.hidden=[8]"]),
        ("grid: {model.dropout: [0.1], optimizer.dropout: [0.2]}",
         ["model.dropout=0.1,optimizer.dropout=0.2"], ["sweep=null", "model.dropout=0.1", "optimizer.dropout=0.2"]),
    ],
    ids=["grid", "zip", "seeds", "list values", "ambiguous short names"],
)
def test_expand_sweep(sweep: str, names: list[str], overrides: list[str]) -> None:
    trials = expand_sweep(parse_yaml(BASE + f"sweep:\n  {sweep}\n" if not sweep.startswith("{") else BASE + f"sweep: {sweep}\n", "s.yaml"))
    assert [t.name for t in trials] == names
    assert trials[0].overrides == overrides


def test_random_search_is_seeded_and_in_range() -> None:
    text = BASE + ("sweep:\n  random:\n    count: 5\n    seed: 3\n    params:\n"
                   "      optimizer.lr: {distribution: log_uniform, low: 1.0e-4, high: 1.0e-2}\n"
                   "      model.activation: {distribution: choice, values: [relu, gelu]}\n")
    first, second = expand_sweep(parse_yaml(text, "s.yaml")), expand_sweep(parse_yaml(text, "s.yaml"))
    assert [t.values for t in first] == [t.values for t in second] and len(first) == 5
    assert all(1e-4 <= t.values["optimizer.lr"] <= 1e-2 for t in first)
    assert {t.values["model.activation"] for t in first} <= {"relu", "gelu"}


@pytest.mark.parametrize(
    "sweep, message",
    [
        ("zip: {a: [1, 2], b: [1]}", "s.yaml:9:3: sweep: zip lists must have equal lengths, got [1, 2]"),
        ("grid: {a: []}", "s.yaml:9:3: sweep: sweep lists must not be empty"),
        ("gird: {a: [1]}", "s.yaml:9:9: sweep.gird: Extra inputs are not permitted"),
        ("random: {count: 2, params: {a: {distribution: log_uniform, low: 0, high: 1}}}",
         "s.yaml:9:34: sweep.random.params.a: log_uniform needs low > 0 (got 0.0)"),
    ],
    ids=["zip lengths", "empty", "misspelled", "log_uniform low"],
)
def test_sweep_errors(sweep: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        expand_sweep(parse_yaml(BASE + f"sweep:\n  {sweep}\n", "s.yaml"))
    assert str(info.value.problems[0]) == message


STAGED = """\
name: st
paper: demo
data: {type: synthetic_classification, n_features: 4}
model: {type: mlp, in_features: 4, out_features: 2}
stages:
  train:
    task: {type: classification}
    loss: {type: cross_entropy}
    optimizer: {type: adam}
  evaluate:
    init: {stage: train}
    task: {type: classification}
    loss: {type: cross_entropy}
    phases: [test]
"""


def test_stages_merge_onto_shared_sections(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(STAGED)
    units = validate_plan(load_spec(tmp_path / "s.yaml"), CommittedSchemas())
    assert [u.stage for u in units] == ["train", "evaluate"]
    assert units[0].operative["name"] == "st/train" and units[1].operative["phases"] == ["test"]
    assert units[1].operative["model"]["in_features"] == 4 and units[0].operative["optimizer"]["type"] == "adam"


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("init: {stage: train}", "init: {stage: trian}",
         "s.yaml:11:19: stages.evaluate.init.stage: unknown earlier stage 'trian'. Earlier stages: train"),
        ("    optimizer: {type: adam}", "    optimizer: {type: adm}",
         "s.yaml:9:23: stages.train.optimizer.type: unknown optimizer 'adm'. Did you mean 'adam'?"),
        ("model: {type: mlp, in_features: 4", "model: {type: mlp, in_feature: 4",
         "s.yaml:4:20: model.in_feature: mlp has no argument 'in_feature'. Did you mean 'in_features'? [in stage 'train']"),
        ("init: {stage: train}", "init: {stage: train, spec: x.yaml}",
         "s.yaml:11:11: stages.evaluate.init: give exactly one of stage, spec, checkpoint (got stage, spec)"),
        ("init: {stage: train}", "init: {stage: train, overrides: ['seed=1']}",
         "s.yaml:11:11: stages.evaluate.init: overrides apply to an upstream spec: give them with `spec`"),
    ],
    ids=["unknown stage", "inside a stage", "shared key", "two init sources", "overrides without spec"],
)
def test_stage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text(STAGED.replace(old, new))
    with pytest.raises(SpecError) as info:
        validate_plan(load_spec("s.yaml"), CommittedSchemas())
    assert message in [str(p) for p in info.value.problems]
