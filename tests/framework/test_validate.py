"""framework/validate.py: one located message per mistake; defaults filled in the operative spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.loader import load_spec
from framework.schema import CommittedSchemas, LiveSchemas
from framework.validate import validate

GOOD = """\
name: t
paper: demo
task: {type: classification}
data:
  type: synthetic_classification
  n_features: 4
model:
  type: mlp
  in_features: 4
  out_features: 2
loss:
  type: weighted_sum
  terms:
    - {type: cross_entropy}
optimizer: {type: adam, lr: 1.0e-3}
metrics: [{type: accuracy}]
"""


def _check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, overrides=(), schemas=None) -> dict:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text(text)
    return validate(load_spec("s.yaml", list(overrides)), schemas or CommittedSchemas())


def test_good_spec_gets_every_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    op = _check(tmp_path, monkeypatch, GOOD)
    assert op["model"] == {"type": "mlp", "in_features": 4, "out_features": 2, "hidden": [64],
                           "activation": "relu", "dropout": 0.0}
    assert op["loss"]["terms"][0] == {"type": "cross_entropy", "weight": 1.0, "label_smoothing": 0.0}
    assert op["optimizer"]["betas"] == [0.9, 0.999]
    assert op["hardware"]["threads"] == 1 and op["seed"] == 0 and op["scheduler"] is None
    assert list(op)[:4] == ["name", "paper", "description", "seed"]


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("  out_features: 2", "  out_features: 2\n  dept: 3",
         "s.yaml:11:3: model.dept: mlp has no argument 'dept'. Valid arguments: in_features, out_features, "
         "hidden, activation, dropout."),
        ("  out_features: 2", "  out_features: 2\n  hiden: [3]",
         "s.yaml:11:3: model.hiden: mlp has no argument 'hiden'. Did you mean 'hidden'?"),
        ("{type: adam,", "{type: adamw_,",
         "s.yaml:15:19: optimizer.type: unknown optimizer 'adamw_'. Did you mean 'adamw'?"),
        ("{type: adam,", "{type: zzz,",
         "s.yaml:15:19: optimizer.type: unknown optimizer 'zzz'. Known optimizers: adam, adamw, sgd."),
        ("lr: 1.0e-3", "lr: fast",
         "s.yaml:15:29: optimizer.lr: expected a number, got string 'fast'"),
        ("lr: 1.0e-3", "lr: '1e-3'",
         "s.yaml:15:29: optimizer.lr: expected a number, got string '1e-3' (it is quoted, so YAML read a "
         "string; remove the quotes)"),
        ("  in_features: 4\n  out", "  out",
         "s.yaml:7:1: model: mlp is missing required argument 'in_features' (an integer)"),
        ("paper: demo", "paper: 2026",
         "s.yaml:2:8: paper: expected a string, got integer 2026 (YAML read it as a number; quote it: '2026')"),
        ("paper: demo", "paper: Demo Paper",
         "s.yaml:2:8: paper: must match the pattern ^[a-z0-9_]+$, got string 'Demo Paper'"),
        ("name: t", "name: t\ntrainer: {max_epoch: 3}",
         "s.yaml:2:11: trainer.max_epoch: section 'trainer' has no key 'max_epoch'. Did you mean 'max_epochs'?"),
        ("name: t", "name: t\nmodle: {}",
         "s.yaml:2:1: modle: the spec has no key 'modle'. Did you mean 'model'?"),
        ("name: t\n", "",
         "s.yaml:1:1: the spec is missing required key 'name'"),
        ("metrics: [{type: accuracy}]", "metrics: [accuracy]",
         "s.yaml:16:11: metrics[0]: expected a metric node (a mapping with 'type: <metric>'), got string 'accuracy'"),
        ("    - {type: cross_entropy}", "    - {type: cross_entropy, wieght: 2}",
         "s.yaml:14:29: loss.terms[0].wieght: cross_entropy has no argument 'wieght'. Did you mean 'weight'?"),
        ("{type: adam,", "{type: adam, params: [],",
         "s.yaml:15:25: optimizer.params: 'params' is supplied by the builder at run time; remove it from the spec"),
        ("name: t", "name: t\nhardware: {accelerator: cpux}",
         "s.yaml:2:25: hardware.accelerator: expected one of 'auto', 'cpu', 'gpu', 'cuda', 'mps', 'tpu', got "
         "string 'cpux'. Did you mean 'cpu'?"),
        ("  out_features: 2", "  out_features: 2\n  activation: rleu",
         "s.yaml:11:15: model.activation: expected one of 'relu', 'gelu', 'tanh', got string 'rleu'. Did you mean 'relu'?"),
        ("model:\n", "model:\n  - x\n",
         "s.yaml:8:3: model: expected a model node (a mapping with 'type: <model>'), got list ['x', {'type': 'mlp'}]"),
    ],
    ids=["unknown arg", "misspelled arg", "unknown component", "unknown, no match", "wrong type",
         "quoted number", "missing required", "number for string", "pattern", "section key", "top key",
         "missing section", "bare name", "nested node arg", "runtime arg", "enum section", "enum arg",
         "not a mapping"],
)
def test_one_located_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, message: str) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    if "model:\n  - x" in text:  # make the mapping a list for the "not a mapping" case
        text = text.replace("  type: mlp\n  in_features: 4\n  out_features: 2\n", "  - {type: mlp}\n")
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, text)
    assert [str(p) for p in info.value.problems] == [message]


def test_override_errors_name_the_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, GOOD, ["optimizer.lr=abc", "model.depth=2"])
    # file problems sort by line; override problems follow, in spec order
    assert [str(p) for p in info.value.problems] == [
        "override 'model.depth=2': model.depth: mlp has no argument 'depth'. Valid arguments: in_features, "
        "out_features, hidden, activation, dropout.",
        "override 'optimizer.lr=abc': optimizer.lr: expected a number, got string 'abc'",
    ]


def test_all_problems_at_once_sorted_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = GOOD.replace("lr: 1.0e-3", "lr: x").replace("name: t", "name: t\nseed: one")
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, text)
    assert str(info.value) == (
        "2 problems in spec:\n"
        "  s.yaml:2:7: seed: expected an integer, got string 'one'\n"
        "  s.yaml:16:29: optimizer.lr: expected a number, got string 'x'"
    )


def test_live_and_committed_schemas_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = GOOD.replace("lr: 1.0e-3", "lr: x").replace("  out_features: 2", "  out_features: 2\n  hiden: 1")
    messages = []
    for schemas in (CommittedSchemas(), LiveSchemas()):
        with pytest.raises(SpecError) as info:
            _check(tmp_path, monkeypatch, text, schemas=schemas)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert _check(tmp_path, monkeypatch, GOOD, schemas=LiveSchemas()) == _check(tmp_path, monkeypatch, GOOD)


def test_base_data_arguments_are_checked_through_kwargs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """synthetic_classification takes the base data module's arguments through **kwargs: both
    schemas know them (typed, with defaults) and reject a misspelling."""
    for schemas in (CommittedSchemas(), LiveSchemas()):
        op = _check(tmp_path, monkeypatch, GOOD, ["data.split_seed=3"], schemas=schemas)
        assert op["data"]["split_seed"] == 3 and op["data"]["val_fraction"] == 0.15
        with pytest.raises(SpecError) as info:
            _check(tmp_path, monkeypatch, GOOD, ["data.split_sed=3", "data.batch_size=x"], schemas=schemas)
        assert [str(p) for p in info.value.problems] == [
            "override 'data.split_sed=3': data.split_sed: synthetic_classification has no argument "
            "'split_sed'. Did you mean 'split_seed'?",
            "override 'data.batch_size=x': data.batch_size: expected an integer, got string 'x'",
        ]
