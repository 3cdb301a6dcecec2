"""framework/validate.py: one located message per mistake; defaults filled in the operative spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import SpecError
from framework.loader import load_spec
from framework.schema import CommittedSchemas, LiveSchemas
from framework.schema_paths import node_ref
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
    ce: {type: cross_entropy}
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
    assert op["loss"] == {"type": "weighted_sum",
                          "terms": {"ce": {"type": "cross_entropy", "weight": 1.0, "label_smoothing": 0.0}}}
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
         "s.yaml:15:19: optimizer.type: unknown optimizer 'zzz'. Known optimizers: adam, adamw, landing_adam, sgd."),
        ("lr: 1.0e-3", "lr: fast",
         "s.yaml:15:29: optimizer.lr: expected a number > 0, got string 'fast'"),
        ("lr: 1.0e-3", "lr: '1e-3'",
         "s.yaml:15:29: optimizer.lr: expected a number > 0, got string '1e-3' (it is quoted, so YAML read a "
         "string; remove the quotes)"),
        ("  in_features: 4\n  out", "  out",
         "s.yaml:7:1: model: mlp is missing required argument 'in_features' (an integer >= 1)"),
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
         "s.yaml:16:11: metrics.0: expected a metric node (a mapping with 'type: <metric>'), got string 'accuracy'"),
        ("    ce: {type: cross_entropy}", "    ce: {type: cross_entropy, smoothing: 2}",
         "s.yaml:14:31: loss.terms.ce.smoothing: cross_entropy has no argument 'smoothing'. Did you mean "
         "'label_smoothing'?"),
        ("{type: adam,", "{type: adam, params: [],",
         "s.yaml:15:25: optimizer.params: 'params' is supplied by the builder at run time; remove it from the spec"),
        ("name: t", "name: t\nhardware: {accelerator: cpux}",
         "s.yaml:2:25: hardware.accelerator: expected one of 'auto', 'cpu', 'gpu', 'cuda', 'mps', 'tpu', got "
         "string 'cpux'. Did you mean 'cpu'?"),
        ("  out_features: 2", "  out_features: 2\n  activation: rleu",
         "s.yaml:11:15: model.activation: expected one of 'relu', 'gelu', 'tanh', got string 'rleu'. Did you mean 'relu'?"),
        ("model:\n", "model:\n  - x\n",
         "s.yaml:8:3: model: expected a model node (a mapping with 'type: <model>'), got list ['x', {'type': 'mlp'}]"),
        ("name: t", "name: t\nloss.terms.ce.weight: 3",
         "s.yaml:2:1: loss.terms.ce.weight: the spec has no key 'loss.terms.ce.weight': keys in a file are not "
         "dotted (a dotted key path is how overrides and sweep axes spell it); nest them: "
         "loss: {terms: {ce: {weight: ...}}}"),
        ("metrics: [{type: accuracy}]", "metrics: [{type: accuracy}]\ncallbacks: [{type: early_stopping, monitor: val_loss}]",
         "s.yaml:17:45: callbacks.0.monitor: early_stopping monitors 'val_loss', which this spec never logs. Did you "
         "mean 'val/loss'? It logs: train/loss, val/loss, test/loss, train/loss.ce, val/loss.ce, test/loss.ce, "
         "train/accuracy, val/accuracy, test/accuracy, train/accuracy_step"),
    ],
    ids=["unknown arg", "misspelled arg", "unknown component", "unknown, no match", "wrong type",
         "quoted number", "missing required", "number for string", "pattern", "section key", "top key",
         "missing section", "bare name", "nested node arg", "runtime arg", "enum section", "enum arg",
         "not a mapping", "dotted key", "monitor never logged"],
)
def test_one_located_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str, message: str) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    if "model:\n  - x" in text:  # make the mapping a list for the "not a mapping" case
        text = text.replace("  type: mlp\n  in_features: 4\n  out_features: 2\n", "  - {type: mlp}\n")
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, text)
    assert [str(p) for p in info.value.problems] == [message]


@pytest.mark.parametrize("monitor", ["val/loss", "val/loss.ce", "test/accuracy", "train/accuracy_step"])
def test_monitor_of_a_logged_metric_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, monitor: str) -> None:
    text = GOOD + f"callbacks: [{{type: checkpoint, monitor: {monitor}}}]\n"
    assert _check(tmp_path, monkeypatch, text)["callbacks"][0]["monitor"] == monitor


def test_a_broken_reference_does_not_hide_other_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from framework.spec_check import check_spec

    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text(GOOD.replace("lr: 1.0e-3", "lr: '${optimizer.learning_rate}'")
                              .replace("  n_features: 4", "  n_features: 0"))
    with pytest.raises(SpecError) as info:
        check_spec("s.yaml", [])
    assert [str(p) for p in info.value.problems] == [
        "s.yaml:6:15: data.n_features: must be >= 1, got integer 0",
        "s.yaml:15:29: optimizer.lr: reference '${optimizer.learning_rate}' not found: 'optimizer' has no key "
        "'learning_rate'. Keys there, defaults included: type, lr, betas, eps, weight_decay, amsgrad, foreach, "
        "maximize, capturable, differentiable, fused, decoupled_weight_decay.",
    ]


def test_override_errors_name_the_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, GOOD, ["optimizer.lr=abc", "model.depth=2"])
    # file problems sort by line; override problems follow, in spec order
    assert [str(p) for p in info.value.problems] == [
        "override 'model.depth=2': model.depth: mlp has no argument 'depth'. Valid arguments: in_features, "
        "out_features, hidden, activation, dropout.",
        "override 'optimizer.lr=abc': optimizer.lr: expected a number > 0, got string 'abc'",
    ]


def test_all_problems_at_once_sorted_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = GOOD.replace("lr: 1.0e-3", "lr: x").replace("name: t", "name: t\nseed: one")
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, text)
    assert str(info.value) == (
        "2 problems in spec:\n"
        "  s.yaml:2:7: seed: expected an integer, got string 'one'\n"
        "  s.yaml:16:29: optimizer.lr: expected a number > 0, got string 'x'"
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
            "override 'data.batch_size=x': data.batch_size: expected an integer >= 1, got string 'x'",
        ]


# -- named loss terms ---------------------------------------------------------------------------

FAIR = """\
name: f
paper: demo
task: {type: classification}
data: {type: synthetic_fair_tabular, n_samples: 200, n_features: 4}
model: {type: mlp, in_features: 4, out_features: 2}
optimizer: {type: adam}
loss:
"""


@pytest.mark.parametrize(
    "loss, overrides, message",
    [
        ("  type: cross_entropy\n  weight: 2.0\n", [],
         "s.yaml:9:3: loss.weight: cross_entropy has no argument 'weight'; a weight belongs to a term of "
         "weighted_sum: {type: weighted_sum, terms: {cross_entropy: {type: cross_entropy, weight: 2.0}}}"),
        ("  type: weighted_sum\n  weight: 3\n  terms: {ce: {type: cross_entropy}}\n", [],
         "s.yaml:9:3: loss.weight: weighted_sum has no argument 'weight'; a weight belongs to a term of "
         "weighted_sum: {type: weighted_sum, terms: {weighted_sum: {type: weighted_sum, weight: 3}}}"),
        ("  type: weighted_sum\n  terms:\n    - {type: cross_entropy}\n    - {type: cvm_dependence, weight: 10.0}\n", [],
         "s.yaml:10:5: loss.terms: terms are named, not listed, so that a key path such as "
         "loss.terms.cvm_dependence.weight stays on its term when terms are reordered; write terms: "
         "{cross_entropy: {type: cross_entropy}, cvm_dependence: {type: cvm_dependence, weight: 10.0}}"),
        ("  type: weighted_sum\n  terms:\n    - {type: mse}\n    - {type: mse, weight: 2.0}\n"
         "    - {type: weighted_sum, terms: [{type: hsic}], weight: 0.5}\n    - {type: 3}\n", [],
         "s.yaml:10:5: loss.terms: terms are named, not listed, so that a key path such as "
         "loss.terms.weighted_sum.weight stays on its term when terms are reordered; write terms: "
         "{mse: {type: mse}, mse_1: {type: mse, weight: 2.0}, weighted_sum: {type: weighted_sum, "
         "terms: {hsic: {type: hsic}}, weight: 0.5}, term_3: {type: 3}}"),
        ("  type: weighted_sum\n  terms: {ce: {type: cross_entropy}, cvm: {type: cvm_dependence}}\n",
         ["loss.terms.1.weight=3"],
         "override 'loss.terms.1.weight=3': loss.terms.1: terms are named, not numbered: write "
         "loss.terms.<name>.weight with <name> one of: ce, cvm"),
        ("  type: weighted_sum\n  terms: {ce: {type: cross_entropy}, cvm: {type: cvm_dependence}}\n",
         ["loss.terms.cmv.weight=3"],
         "override 'loss.terms.cmv.weight=3': loss.terms.cmv: term 'cmv' has no 'type' (a new term needs "
         "one). Did you mean 'cvm'?"),
        ("  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy, weight: -1.0}\n", [],
         "s.yaml:10:39: loss.terms.ce.weight: must be a finite number >= 0, got number -1.0"),
        ("  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy, weight: '2'}\n", [],
         "s.yaml:10:39: loss.terms.ce.weight: expected a number >= 0, got string '2' (it is quoted, so "
         "YAML read a string; remove the quotes)"),
        ("  type: weighted_sum\n  terms:\n    CE: {type: cross_entropy}\n", [],
         "s.yaml:10:5: loss.terms.CE: term names are lower_snake_case (they are key paths and metric "
         "names), got 'CE'"),
        ("  type: weighted_sum\n  terms: {ce: {type: cross_entropy}}\n", ["loss.terms.ce=null"],
         "override 'loss.terms.ce=null': loss.terms: every term is removed (null): keep at least one, or "
         "replace loss with a node of another type"),
        ("  type: weighted_sum\n  terms: {}\n", [],
         "s.yaml:9:10: loss.terms: expected at least one term (name -> loss node), got mapping {}"),
        ("  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy}\n    fair:\n      type: weighted_sum\n"
         "      terms: {cvm: {type: cvm_dependence, wieght: 2.0}}\n", [],
         "s.yaml:13:43: loss.terms.fair.terms.cvm.wieght: cvm_dependence has no argument 'wieght'. "
         "Valid arguments: regularization, on, standardize."),
        ("  type: weighted_sum\n  terms: {ce: {type: cross_entropy}}\n", ["model.weight=2"],
         "override 'model.weight=2': model.weight: mlp has no argument 'weight'. Valid arguments: "
         "in_features, out_features, hidden, activation, dropout."),
    ],
    ids=["weight on a lone loss", "weight on the sum itself", "terms as a list", "list: duplicates, nested",
         "index override", "misspelled term", "negative weight", "quoted weight", "term name",
         "every term removed", "no term", "nested term argument", "weight elsewhere: no old spelling"],
)
def test_term_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loss: str, overrides: list[str],
                       message: str) -> None:
    with pytest.raises(SpecError) as info:
        _check(tmp_path, monkeypatch, FAIR + loss, overrides)
    assert [str(p) for p in info.value.problems] == [message]


TERMS = {
    "ce, cvm": "  terms:\n    ce: {type: cross_entropy}\n    cvm: {type: cvm_dependence, weight: 10.0}\n",
    "cvm, ce": "  terms:\n    cvm: {type: cvm_dependence, weight: 10.0}\n    ce: {type: cross_entropy}\n",
}


@pytest.mark.parametrize("override", [[], ["loss.terms.cvm.weight=3.0"]], ids=["as written", "overridden"])
def test_reordered_terms_keep_their_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: list[str]) -> None:
    """`loss.terms.cvm.weight` is the CvM term's weight in either order, and the built sum is the same."""
    import torch

    from framework.builder import Builder

    built, operative = {}, {}
    for order, terms in TERMS.items():
        operative[order] = _check(tmp_path, monkeypatch, FAIR + "  type: weighted_sum\n" + terms, override)
        built[order] = Builder(load_spec("s.yaml", override)).node("losses", operative[order]["loss"], ("loss",))
    weight = 3.0 if override else 10.0
    for op in operative.values():
        assert op["loss"]["terms"]["cvm"] == {"type": "cvm_dependence", "weight": weight, "regularization": 0.02,
                                              "on": "logit", "standardize": True}
    assert operative["ce, cvm"]["loss"]["terms"] == operative["cvm, ce"]["loss"]["terms"]
    torch.manual_seed(0)
    outputs, batch = torch.randn(32, 2), {"y": torch.randint(0, 2, (32,)), "group": torch.arange(32) % 2}
    values = {order: loss(outputs, batch) for order, loss in built.items()}
    assert built["cvm, ce"].weights == {"cvm": weight, "ce": 1.0}
    assert torch.allclose(values["ce, cvm"], values["cvm, ce"])
    parts = built["ce, cvm"].last_terms
    assert torch.allclose(values["ce, cvm"], parts["ce"] + weight * parts["cvm"])


@pytest.mark.parametrize(
    "child, terms",
    [
        ("loss:\n  terms:\n    cvm: null\n", {"ce": {"type": "cross_entropy", "weight": 1.0, "label_smoothing": 0.0}}),
        ("loss:\n  terms:\n    cvm: null\n    hsic: {type: hsic, weight: 20.0}\n",
         {"ce": {"type": "cross_entropy", "weight": 1.0, "label_smoothing": 0.0},
          "hsic": {"type": "hsic", "weight": 20.0, "bandwidth": None}}),
        ("loss:\n  terms:\n    cvm: {weight: 5.0}\n",
         {"ce": {"type": "cross_entropy", "weight": 1.0, "label_smoothing": 0.0},
          "cvm": {"type": "cvm_dependence", "weight": 5.0, "regularization": 0.01, "on": "logit", "standardize": True}}),
    ],
    ids=["remove a term", "swap a term", "change a weight"],
)
def test_child_spec_edits_terms_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child: str, terms: dict) -> None:
    monkeypatch.chdir(tmp_path)
    Path("base.yaml").write_text(FAIR + "  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy}\n"
                                 "    cvm: {type: cvm_dependence, weight: 10.0, regularization: 0.01}\n")
    Path("child.yaml").write_text("extends: base.yaml\n" + child)
    assert validate(load_spec("child.yaml"), CommittedSchemas())["loss"] == {"type": "weighted_sum", "terms": terms}


def test_nested_weighted_sum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A weighted sum is a term like any other: its weight scales its own weighted terms."""
    import torch

    from framework.builder import Builder

    text = FAIR + ("  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy}\n"
                   "    fair:\n      type: weighted_sum\n      weight: 2.0\n"
                   "      terms: {cvm: {type: cvm_dependence, weight: 3.0}, hsic: {type: hsic}}\n")
    override = ["loss.terms.fair.terms.cvm.weight=4.0"]
    op = _check(tmp_path, monkeypatch, text, override)
    fair = op["loss"]["terms"]["fair"]
    assert (fair["type"], fair["weight"], list(fair["terms"])) == ("weighted_sum", 2.0, ["cvm", "hsic"])
    assert (fair["terms"]["cvm"]["weight"], fair["terms"]["hsic"]["weight"]) == (4.0, 1.0)
    assert op == _check(tmp_path, monkeypatch, text, override, schemas=LiveSchemas())
    loss = Builder(load_spec("s.yaml", override)).node("losses", op["loss"], ("loss",))
    torch.manual_seed(0)
    outputs, batch = torch.randn(32, 2), {"y": torch.randint(0, 2, (32,)), "group": torch.arange(32) % 2}
    total = loss(outputs, batch)
    parts = loss.last_terms
    assert list(parts) == ["ce", "fair", "fair.cvm", "fair.hsic"]
    assert torch.allclose(total, parts["ce"] + 2.0 * (4.0 * parts["fair.cvm"] + parts["fair.hsic"]))


def test_node_shapes_read_from_schemas() -> None:
    """The builder and the checker read an argument's shape off its schema, Optional or not."""
    from components.kinds import Loss, Metric, WeightedLosses
    from framework.schema import type_schema

    shapes = [node_ref(type_schema(a)) for a in (Loss, list[Metric], WeightedLosses, WeightedLosses | None, float)]
    assert shapes == [("losses", "node"), ("metrics", "list"), ("losses", "terms"), ("losses", "terms"), None]


TINY = Path(__file__).resolve().parents[2] / "specs/cvm_fairness/tiny.yaml"


@pytest.mark.parametrize(
    "line, message",
    [
        ("phases: [fit, tset]", "b.yaml:2:15: phases.1: expected one of 'fit', 'test', 'predict', got string 'tset'. "
                                "Did you mean 'test'?"),
        ("init: {stage: 5}", "b.yaml:2:15: init.stage: expected a string or null, got integer 5"),
        ("init: {stag: x}", "b.yaml:2:8: init.stag: 'init' has no key 'stag'. Did you mean 'stage'?"),
        ("sweep: {grid: {seed: 3}}", "b.yaml:2:22: sweep.grid.seed: expected a list, got integer 3"),
        ("sweep: {seeds: 3}", "b.yaml:2:16: sweep.seeds: expected a list of (an integer), got integer 3"),
        ("sweep: {grdi: {seed: [1]}}", "b.yaml:2:9: sweep.grdi: 'sweep' has no key 'grdi'. Did you mean 'grid'?"),
        ("sweep: {random: {count: 0, params: {}}}", "b.yaml:2:25: sweep.random.count: must be >= 1, got integer 0"),
        ("sweep: {random: {count: 2, params: {lr: {distribution: gauss}}}}",
         "b.yaml:2:56: sweep.random.params.lr.distribution: expected one of 'uniform', 'log_uniform', "
         "'int_uniform', 'choice', got string 'gauss'"),
        ("sweep: {zip: {a: [1], b: [1, 2]}}", "b.yaml:2:8: sweep: zip lists must have equal lengths, got [1, 2]"),
    ],
    ids=["phase", "init-type", "init-key", "grid-not-list", "seeds-not-list", "sweep-key", "count", "distribution", "zip"],
)
def test_nested_section_errors_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, message: str) -> None:
    """Mistakes inside the nested sections (phases, init, sweep) are located messages, not the
    internal KeyError they used to be."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.yaml").write_text(f"extends: {TINY}\n{line}\n")
    with pytest.raises(SpecError) as error:
        validate(load_spec(tmp_path / "b.yaml"), CommittedSchemas())
    assert [str(p) for p in error.value.problems] == [message]


def test_regression_reports_mae_rmse_r2_unless_the_spec_lists_metrics(tmp_path) -> None:
    """A regression spec without `metrics` gets the task's DEFAULT_METRICS in its operative spec
    (so `exp show`, the hash and the run have them); `metrics: []` or a list of its own is kept."""
    from framework.loader import load_spec
    from framework.schema import CommittedSchemas
    from framework.validate import validate

    base = ("name: r\npaper: p\ntask: {type: regression}\nmodel: {type: mlp, in_features: 4, out_features: 1}\n"
            "data: {type: synthetic_regression, n_features: 4}\nloss: {type: mse}\n")
    cases = {"": ["mae", "rmse", "r2"], "metrics: []\n": [], "metrics: [{type: mae}]\n": ["mae"]}
    for extra, expected in cases.items():
        path = tmp_path / "spec.yaml"
        path.write_text(base + extra)
        operative = validate(load_spec(path), CommittedSchemas())
        assert [m["type"] for m in operative["metrics"]] == expected, extra
    path.write_text(base.replace("regression", "classification").replace("synthetic_regression", "synthetic_classification"))
    assert validate(load_spec(path), CommittedSchemas())["metrics"] == []  # classification declares no defaults


def test_logged_metric_templates_name_the_split() -> None:
    """`{split}` is train, val or test in a task's LOGGED_METRICS (`x-logs`); `{stage}`, its old
    spelling, still expands the same, but no landed task writes it ("stage" is a spec's stage)."""
    from framework.schema_files import read_defs
    from framework.validate import logged_metrics

    assert logged_metrics(["{stage}/loss"], {}) == logged_metrics(["{split}/loss"], {}) == [
        "train/loss", "val/loss", "test/loss"]
    templates = [t for node in read_defs().values() if isinstance(node, dict) for t in node.get("x-logs") or []]
    assert templates and not [t for t in templates if "{stage}" in t]
