"""framework/plan.py: sweep expansion and stage splitting, with located errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.loader import load_spec
from framework.marked_yaml import parse_yaml
from framework.plan import SweepChecker, expand_sweep, validate_plan
from framework.schema import CommittedSchemas
from framework.validate import CheckMemo

ROOT = Path(__file__).resolve().parents[2]

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


# -- one-pass trial checking (SweepChecker) and caps -------------------------------------------

REFERENCING = BASE.replace("data: {type: synthetic_classification, n_features: 4}",
                           "data: {type: synthetic_classification, n_features: '${width}', seed: '${seed}'}") \
    .replace("model: {type: mlp, in_features: 4,", "model: {type: mlp, in_features: '${data.n_features}',") \
    + "width: 4\nmetrics: [{type: accuracy}]\n"


@pytest.mark.parametrize(
    "spec, sweep",
    [
        (BASE, "grid: {optimizer.lr: [0.1, 0.01], model.hidden: [[8], [8, 8]]}"),
        (REFERENCING, "{grid: {width: [4, 6]}, seeds: [1, 2]}"),  # seeds feed sizes below: >= 1  # a reference chain: width -> data -> model
        (REFERENCING, "grid: {metrics.0.type: [accuracy, auroc], metrics: [[{type: accuracy}]]}"),
        (BASE, "grid: {scheduler: [null, {type: cosine}], loss: [{type: cross_entropy, label_smoothing: 0.1}]}"),
        (BASE, "zip: {model: [{type: mlp, in_features: 4, out_features: 3}], optimizer.lr: [1]}"),
        (STAGED, "{grid: {stages.train.optimizer.lr: [0.3, 0.4], model.hidden: [[3]]}, seeds: [0, 1]}"),
    ],
    ids=["plain values", "references", "list items", "new and removed sections", "int vs float", "stages"],
)
def test_checker_units_equal_loading_each_trial(tmp_path: Path, spec: str, sweep: str) -> None:
    """Every trial's operative spec from SweepChecker (one load, re-validating what a trial's
    overrides reach) equals the one of loading and validating the spec with the trial's overrides."""
    if "width" in spec:  # `width` is not a spec key: a sweep over it would be invalid; keep it as a reference source
        spec = spec.replace("width: 4\n", "description: '4'\n").replace("${width}", "${seed}")
        sweep = sweep.replace("width: [4, 6]", "description: ['4', '6']")
    path = tmp_path / "s.yaml"
    path.write_text(spec + f"sweep: {{{sweep}}}\n" if not sweep.startswith("{") else spec + f"sweep: {sweep}\n")
    schemas = CommittedSchemas()
    checker = SweepChecker(path, ["seed=2"], schemas)
    assert checker.trials
    # As `exp validate` builds it: handed the spec it has just loaded and validated, with its sweep.
    with_sweep = load_spec(path, ["seed=2"])
    validate_plan(with_sweep, schemas, CheckMemo())
    given = SweepChecker(path, ["seed=2"], schemas, CheckMemo(), with_sweep)
    assert [t.overrides for t in given.trials] == [t.overrides for t in checker.trials]
    for trial in checker.trials:
        expected = [u.operative for u in validate_plan(load_spec(path, ["seed=2", *trial.overrides]), schemas)]
        assert [u.operative for u in checker.units(trial)] == expected, trial.name
        assert [json.dumps(u.operative) for u in checker.units(trial)] == [json.dumps(o) for o in expected]
        assert [json.dumps(u.operative) for u in given.units(trial)] == [json.dumps(o) for o in expected]


def test_checker_locates_a_trial_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text(BASE + "sweep:\n  grid: {optimizer.lr: [0.1, fast], model.dropout: [0.0, 0.5]}\n")
    problems = [str(p) for p in SweepChecker("s.yaml", [], CommittedSchemas()).check()]
    assert problems == [
        # on the line of the sweep axis that wrote the value, not as if the user had typed an override
        "s.yaml:9:10: optimizer.lr: sweep axis optimizer.lr=fast: expected a number > 0, got string 'fast' [trial lr=fast,dropout=0.0]",
        "s.yaml:9:10: optimizer.lr: sweep axis optimizer.lr=fast: expected a number > 0, got string 'fast' [trial lr=fast,dropout=0.5]",
    ]
    assert str(SweepChecker("s.yaml", [], CommittedSchemas()).check(limit=1)[-1]) == "... and 1 more trial(s) of 4 with problems"


@pytest.mark.parametrize(
    "sweep, message",
    [
        ("random: {count: 1000000000, params: {optimizer.lr: {distribution: uniform, low: 0, high: 1}}}",
         "s.yaml:9:19: sweep.random.count: 1000000000 trials (random.count 1000000000) is over the cap of 100000 "
         "trials per sweep; split it into several sweeps or sample it with `random:`"),
        ("{grid: {optimizer.lr: [RANGE], model.dropout: [RANGE]}, seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}",
         "s.yaml:8:8: sweep: 110000 trials (grid 100 x 100 x seeds 11) is over the cap of 100000 trials per sweep; "
         "split it into several sweeps or sample it with `random:`"),
    ],
    ids=["random count", "grid x seeds"],
)
def test_sweep_size_is_capped_before_expanding(sweep: str, message: str) -> None:
    values = ", ".join(str(i) for i in range(100))
    text = BASE + ("sweep:\n  " + sweep if not sweep.startswith("{") else "sweep: " + sweep).replace("RANGE", values) + "\n"
    with pytest.raises(SpecError) as info:
        expand_sweep(parse_yaml(text, "s.yaml"))
    assert [str(p) for p in info.value.problems] == [message]


def test_a_grid_of_10000_trials_validates_and_plans_without_torch(tmp_path: Path) -> None:
    """`exp validate` and sweep planning both go through every one of 10,000 trials, and planning
    imports neither torch nor MLflow (the timing is benchmarks/validate_speed.py's)."""
    values = ", ".join(f"{i / 1000}" for i in range(1, 101))
    spec = tmp_path / "grid.yaml"
    spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\n"
                    f"sweep:\n  grid: {{optimizer.lr: [{values}], loss.terms.cvm.weight: [{values}]}}\n")
    script = ("import sys; from framework.cli import main; from framework.sweep_plan import plan_trials\n"
              f"assert main(['validate', '-q', '{spec}']) == 0\n"
              f"trials, hashes, base = plan_trials('{spec}', [])\n"
              "print(len(trials), len(set(hashes)), 'torch' in sys.modules, 'mlflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-4:] == ["10000", "10000", "False", "False"]
