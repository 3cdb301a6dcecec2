"""framework/loader.py and the modules it reads with (file_text, marked_yaml, yaml_syntax, references):
YAML with marks, extends, overrides, references; exact error texts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.errors import Mark, SpecError
from framework.loader import apply_overrides, load_file, load_spec
from framework.marked_yaml import parse_yaml
from framework.references import resolve_references


ALLOWED = "is not allowed in a spec (allowed: plain values, or the tags !!str, !!int, !!float, !!bool, !!null, !!seq, !!map)"


def _files(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lr: 1e-3", {"lr": 0.001}),
        ("lr: 1.0e-3", {"lr": 0.001}),
        ("n: 1E+5", {"n": 100000.0}),
        ("v: 10", {"v": 10}),
        ("v: '1e-3'", {"v": "1e-3"}),
        ("v: [1, 2.5, x]", {"v": [1, 2.5, "x"]}),
        ("v: .inf", {"v": float("inf")}),
    ],
    ids=["1e-3 float", "1.0e-3", "1E+5", "int", "quoted stays string", "list", "inf"],
)
def test_scalars(text: str, expected: dict) -> None:
    assert parse_yaml(text, "x.yaml").data == expected


def test_marks_are_one_based_key_and_value() -> None:
    loaded = parse_yaml("model:\n  type: mlp\n  hidden: [3, 4]\n", "s.yaml")
    assert loaded.key_mark(("model", "hidden")) == Mark("s.yaml", 3, 3)
    assert loaded.value_mark(("model", "hidden")) == Mark("s.yaml", 3, 11)
    assert loaded.value_mark(("model", "hidden", 1)) == Mark("s.yaml", 3, 15)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: 1\na: 2\n", "x.yaml:2:1: a: duplicate key 'a' (first at line 1)"),
        ("a: !!python/object:os.system x\n", f"x.yaml:1:4: a: tag '!!python/object:os.system' {ALLOWED}"),
        ("a: !!python/name:os.system {}\n", f"x.yaml:1:4: a: tag '!!python/name:os.system' {ALLOWED}"),
        ("base: &b {x: 1}\nc:\n  <<: *b\n", "x.yaml:3:3: c: YAML merge keys ('<<') are not supported; use 'extends:'"),
        ("a: [1, 2\n", "x.yaml:2:1: invalid YAML: the '[' at line 1, column 4 is not closed by ']', or a comma is "
                      "missing between two items"),
        ("1: x\n", "x.yaml:1:1: keys must be strings, got int 1"),
    ],
    ids=["duplicate key", "python tag", "python tag on mapping", "merge key", "syntax", "int key"],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml(text, "x.yaml")
    assert [str(p) for p in info.value.problems] == [message]


@pytest.mark.parametrize(
    "text, message",
    [
        ("a:\n\tb: 1\n", "x.yaml:2:1: invalid YAML: a tab character: YAML indents with spaces only; replace the tab "
                         "with spaces"),
        ("a: {b: ${seed}}\n", "x.yaml:1:9: invalid YAML: a ${...} reference inside a {...} flow mapping must be "
                              "quoted (YAML reads '{' as the start of a mapping): write it in quotes, as in "
                              "{seed: '${seed}'}"),
        ("a: [1, ${seed}]\n", "x.yaml:1:9: invalid YAML: a ${...} reference inside a [...] flow list must be quoted "
                              "(YAML reads '{' as the start of a mapping): write it in quotes, as in ['${seed}']"),
        ("a:\n  b 1\n  c: 2\n", "x.yaml:3:4: invalid YAML: line 2 has no ':' after its key (write 'key: value'), "
                               "so this line continues it"),
        ("a:\n  b: 1\n   c: 2\n", "x.yaml:3:5: invalid YAML: this line is indented more than line 2 above it; the "
                                 "keys of one mapping start in the same column"),
        ("a:\n  b: 1\n c: 2\n", "x.yaml:3:2: invalid YAML: line 3 is not in line with the lines above it: the keys of "
                               "one mapping start in the same column, and so do the '-' of one list's items"),
        ("title: a: b\n", "x.yaml:1:9: invalid YAML: a value holds ': ' (a colon and a space); quote the value, as "
                          "in title: 'a: b'"),
        ("a: \"x\nb: 1\n", "x.yaml:3:1: invalid YAML: the quoted string that starts at line 1, column 4 is never "
                          "closed"),
        ("a: 'it's'\n", "x.yaml:1:8: invalid YAML: a quote inside a '...' string is written twice ('it''s'), or use "
                        "double quotes (\"it's\")"),
    ],
    ids=["tab", "reference in flow mapping", "reference in flow list", "missing colon", "indented more",
         "indented out of line", "colon in value", "unclosed quote", "quote in quotes"],
)
def test_yaml_syntax_errors_in_plain_words(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml(text, "x.yaml")
    assert [str(p) for p in info.value.problems] == [message]


def test_extends_merges_mappings_and_replaces_lists(tmp_path: Path) -> None:
    _files(tmp_path, {
        "_base.yaml": "name: base\nmodel: {type: mlp, hidden: [64, 64], in_features: 8}\nmetrics: [{type: accuracy}]\n",
        "child.yaml": "extends: _base.yaml\nname: child\nmodel:\n  hidden: [32]\nmetrics: []\n",
    })
    loaded = load_file(tmp_path / "child.yaml")
    assert loaded.data == {
        "name": "child",
        "model": {"type": "mlp", "hidden": [32], "in_features": 8},
        "metrics": [],
    }
    # marks point to where each surviving value was written
    assert loaded.key_mark(("model", "hidden")).source.endswith("child.yaml")
    assert loaded.key_mark(("model", "in_features")).source.endswith("_base.yaml")


def test_extends_merges_named_terms_by_name(tmp_path: Path) -> None:
    """A child changes one term, removes one (null, dropped later by validation), adds one."""
    _files(tmp_path, {
        "base.yaml": "loss:\n  type: weighted_sum\n  terms:\n    ce: {type: cross_entropy}\n"
                     "    cvm: {type: cvm_dependence, weight: 10.0, regularization: 0.02}\n"
                     "    fit: {type: mse, weight: 2.0}\n",
        "child.yaml": "extends: base.yaml\nloss:\n  terms:\n    fit: {weight: 0.5}\n    cvm: null\n"
                      "    hsic: {type: hsic, weight: 20.0}\n    ce: {type: bce}\n",
    })
    assert load_file(tmp_path / "child.yaml").data == {"loss": {"type": "weighted_sum", "terms": {
        "ce": {"type": "bce"},                    # another type: replaced whole
        "cvm": None,                              # removed by validation
        "fit": {"type": "mse", "weight": 0.5},    # same type: merged
        "hsic": {"type": "hsic", "weight": 20.0},  # new: after the base's terms
    }}}


def test_extends_list_merges_left_to_right(tmp_path: Path) -> None:
    _files(tmp_path, {
        "a.yaml": "x: 1\ny: {p: 1}\n",
        "b.yaml": "x: 2\ny: {q: 2}\n",
        "c.yaml": "extends: [a.yaml, b.yaml]\ny: {r: 3}\n",
    })
    assert load_file(tmp_path / "c.yaml").data == {"x": 2, "y": {"p": 1, "q": 2, "r": 3}}


def test_extends_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, {"a.yaml": "extends: b.yaml\n", "b.yaml": "extends: a.yaml\n"})
    with pytest.raises(SpecError) as info:
        load_file("a.yaml")
    assert str(info.value.problems[0]) == "b.yaml:1:10: extends: extends cycle: a.yaml -> b.yaml -> a.yaml"


def test_extends_missing_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, {"a.yaml": "extends: nope.yaml\n"})
    with pytest.raises(SpecError) as info:
        load_file("a.yaml")
    assert str(info.value.problems[0]) == "a.yaml:1:10: extends: base spec 'nope.yaml' not found (looked for nope.yaml)"


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["optimizer.lr=3e-3"], {"optimizer": {"type": "adam", "lr": 0.003}, "layers": [{"w": 1}, {"w": 2}]}),
        (["layers.1.w=5"], {"optimizer": {"type": "adam", "lr": 0.1}, "layers": [{"w": 1}, {"w": 5}]}),
        (["optimizer={type: sgd}"], {"optimizer": {"type": "sgd"}, "layers": [{"w": 1}, {"w": 2}]}),
        (["trainer.max_epochs=2"], {"optimizer": {"type": "adam", "lr": 0.1}, "layers": [{"w": 1}, {"w": 2}],
                                    "trainer": {"max_epochs": 2}}),
        (["layers=[]", "optimizer.lr=null"], {"optimizer": {"type": "adam", "lr": None}, "layers": []}),
    ],
    ids=["number", "list index", "whole node", "new section", "in order, null"],
)
def test_overrides(overrides: list[str], expected: dict) -> None:
    loaded = parse_yaml("optimizer: {type: adam, lr: 0.1}\nlayers: [{w: 1}, {w: 2}]\n", "s.yaml")
    apply_overrides(loaded, overrides)
    assert loaded.data == expected


@pytest.mark.parametrize(
    "override, message",
    [
        ("optimizer.lr", "override 'optimizer.lr': expected key.path=value"),
        ("layers.7.w=1", "override 'layers.7.w=1': layers: index '7' is not valid for a list of 2 item(s)"),
        ("optimizer.lr.x=1", "override 'optimizer.lr.x=1': optimizer.lr: cannot set 'x' inside a float"),
        ("extends=a.yaml", "override 'extends=a.yaml': extends: 'extends' cannot be overridden; edit the spec file"),
        ("a=[1,", "override 'a=[1,': invalid YAML: did not find expected node content"),
    ],
    ids=["no value", "bad index", "into a scalar", "extends", "bad yaml"],
)
def test_override_errors(override: str, message: str) -> None:
    loaded = parse_yaml("optimizer: {type: adam, lr: 0.1}\nlayers: [{w: 1}, {w: 2}]\n", "s.yaml")
    with pytest.raises(SpecError) as info:
        apply_overrides(loaded, [override])
    assert [str(p) for p in info.value.problems] == [message]


def test_references_typed_and_formatted(tmp_path: Path) -> None:
    _files(tmp_path, {"s.yaml": "data: {n: 6, tag: 'n${data.n}'}\nmodel: {in_features: '${data.n}', alias: '${model.in_features}'}\n"})
    assert load_spec(tmp_path / "s.yaml").data == {
        "data": {"n": 6, "tag": "n6"},
        "model": {"in_features": 6, "alias": 6},
    }


def test_references_see_the_operative_spec_defaults_included(tmp_path: Path) -> None:
    """The README's `${data.n_features}`: a key the spec does not write is its default (of the
    data module its `type` names, of a section, nested nodes included)."""
    _files(tmp_path, {"s.yaml": "data: {type: synthetic_fair_tabular}\n"
                                "model: {type: mlp, in_features: '${data.n_features}', hidden: ['${model.activation}']}\n"
                                "seed: '${trainer.max_steps}'\nname: 'h${hardware.devices}'\n"
                                "loss: {type: weighted_sum, terms: {cvm: {type: cvm_dependence}}}\n"
                                "tag: '${loss.terms.cvm.regularization}'\n"})
    data = load_spec(tmp_path / "s.yaml").data
    assert data["model"] == {"type": "mlp", "in_features": 6, "hidden": ["relu"]} and data["seed"] == -1 and data["name"] == "h1"
    assert data["tag"] == 0.02


def test_references_see_overrides(tmp_path: Path) -> None:
    _files(tmp_path, {"s.yaml": "data: {n: 6}\nmodel: {in_features: '${data.n}'}\n"})
    assert load_spec(tmp_path / "s.yaml", ["data.n=9"]).data["model"] == {"in_features": 9}


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: ${b.n_feature}\nb: {n_features: 1}\n",
         "s.yaml:1:4: a: reference '${b.n_feature}' not found: 'b' has no key 'n_feature'. Did you mean "
         "'n_features'? Keys there: n_features."),
        ("a: ${b}\nb: ${a}\n", "s.yaml:1:4: a: reference cycle: b -> a -> b"),
        ("a: ${model.widht}\nmodel: {type: mlp, in_features: 3}\n",
         "s.yaml:1:4: a: reference '${model.widht}' not found: 'model' has no key 'widht'. Keys there, defaults "
         "included: type, in_features, hidden, activation, dropout."),
        ("a: ${model.hidden}\nmodel: {type: mlq}\n",
         "s.yaml:1:4: a: reference '${model.hidden}' not found: 'model' has no key 'hidden' (its defaults are not "
         "known: 'mlq' is not a registered model). Keys there: type."),
        ("a: ${metrics.2.type}\nmetrics: [{type: accuracy}]\n",
         "s.yaml:1:4: a: reference '${metrics.2.type}' not found: 'metrics' is a list of 1 item(s); '2' is not one "
         "of its indices"),
    ],
    ids=["missing", "cycle", "missing, defaults listed", "defaults unknown", "list index"],
)
def test_reference_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec("s.yaml")
    assert str(info.value.problems[0]) == message


# -- hostile input: each limit of the module docstring, at its boundary ------------------------------

def _problems(text: str) -> list[str]:
    try:
        parse_yaml(text, "x.yaml")
    except SpecError as error:
        return [str(p) for p in error.problems]
    return []


PAD = "# " + ":" * 2100 + "\n"  # enough level-opening characters that nesting is first read as events


@pytest.mark.parametrize(
    "text, problems",
    [
        ("a: " + "[" * 63 + "1" + "]" * 63, []),
        ("a: " + "[" * 64 + "1" + "]" * 64, ["x.yaml:1:1: a: nested deeper than 64 levels of lists and mappings "
                                             "(a spec nests at most 64)"]),
        (PAD + "a: " + "[" * 63 + "1" + "]" * 63, []),
        (PAD + "a: " + "[" * 64 + "1" + "]" * 64, ["x.yaml:2:67: nested deeper than 64 levels of lists and mappings "
                                                   "(a spec nests at most 64)"]),
        ("a: &x [1]\nb: [" + ", ".join(["*x"] * 5_000) + "]", []),  # each alias: a list and its item
        ("a: &x [1]\nb: [" + ", ".join(["*x"] * 5_001) + "]",
         ["x.yaml:2:1: b.5000: aliases ('*name') expand to more than 10000 values (an alias bomb?); "
          "write the values out, or use fewer aliases"]),
        ("a: &x [1, *x]", ["x.yaml:1:1: a.1: this value contains itself (a recursive alias '*' inside its own anchor '&')"]),
        ("a: 18446744073709551615\nb: -9223372036854775808", []),
        ("a: -9223372036854775809", ["x.yaml:1:4: a: integer -9223372036854775809 is out of range: a spec's integers "
                                     "lie between -2**63 and 2**64-1 (64 bits)"]),
        ("a: 1e308\nb: -.inf", []),
        ("a: -1e309", ["x.yaml:1:4: a: number -1e309 is too large for a 64-bit float (at most about 1.8e308)"]),
        ("a: !!float x", ["x.yaml:1:4: a: cannot read 'x' as !!float"]),
        ("a: !!str 5\nb: !!int '5'\nc: !!null ''", []),
        ("a: !!set {x: null}", [f"x.yaml:1:4: a: tag '!!set' {ALLOWED}"]),
        ("a: !local 5", [f"x.yaml:1:4: a: tag '!local' {ALLOWED}"]),
        ("null: 1", ["x.yaml:1:1: keys must be strings, got NoneType None"]),
        ("a: 1\r\nb: 2\r\n", []),
        ("a: \x85", []),
        ("a: 1\x7f", ["x.yaml:1:5: character U+007F ('\\x7f') is not allowed; YAML text has no control characters "
                      "other than tab, newline and carriage return"]),
        ("\t\n \t\n", []),
    ],
    ids=["64 levels", "65 levels", "64 levels read as events", "65 levels read as events", "10000 aliased values",
         "10001 aliased values", "recursive alias", "64-bit integers", "below -2**63", "largest float",
         "float overflow", "!!float x", "plain tags", "!!set", "local tag", "null key", "CRLF", "NEL", "DEL",
         "tabs only"],
)
def test_limits(text: str, problems: list[str]) -> None:
    assert _problems(text) == problems


def test_file_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A UTF-8 byte-order mark is skipped; a file over MAX_FILE_BYTES, or not a regular file, is refused."""
    from framework.file_text import MAX_FILE_BYTES

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert load_file(Path("bom.yaml")).data == {"a": 1}
    (tmp_path / "big.yaml").write_bytes(b"# " + b"x" * MAX_FILE_BYTES)
    os.mkfifo(tmp_path / "fifo.yaml")
    for name, message in [("big.yaml", f"big.yaml: file is larger than {MAX_FILE_BYTES} bytes: a spec is a short "
                                       "YAML text written by hand (is this a spec?)"),
                          ("fifo.yaml", "fifo.yaml: is not a regular file (a spec is a YAML text file)"),
                          ("none.yaml", "none.yaml: file not found")]:
        with pytest.raises(SpecError) as info:
            load_file(Path(name))
        assert [str(p) for p in info.value.problems] == [message]


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a: 1\nb: [" + ", ".join(["'${a}'"] * 10_000) + "]\n", None),
        ("a: 1\nb: [" + ", ".join(["'${a}'"] * 10_001) + "]\n",
         "x.yaml:2:80005: b.10000: references ('${...}') expand to more than 10000 values (a reference bomb?); refer to "
         "fewer or smaller values"),
        ("a: " + "x" * 100 + "\nb: '" + "${a}" * 100 + "'\n", None),
        ("a: " + "x" * 100 + "\nb: '-" + "${a}" * 100 + "'\n",
         "x.yaml:2:4: b: references ('${...}') make a string longer than 10000 characters (a reference bomb?)"),
        ("".join(f"c{i}: ${{c{i + 1}}}\n" for i in range(64)) + "c64: 1\n", None),
        ("".join(f"c{i}: ${{c{i + 1}}}\n" for i in range(65)) + "c65: 1\n",
         "x.yaml:1:5: c0: a chain of more than 64 references ('${a}' -> '${b}' -> ...)"),
        ("a: " + "[" * 40 + "1" + "]" * 40 + "\nb: " + "[" * 23 + "'${a}'" + "]" * 23, None),
        ("a: " + "[" * 40 + "1" + "]" * 40 + "\nb: " + "[" * 24 + "'${a}'" + "]" * 24,
         "x.yaml:2:28: b: nested deeper than 64 levels of lists and mappings (a spec nests at most 64), references "
         "resolved"),
    ],
    ids=["10000 values", "10001 values", "10000 characters", "10001 characters", "chain of 64", "chain of 65",
         "64 levels resolved", "65 levels resolved"],
)
def test_reference_limits(text: str, problem: str | None) -> None:
    loaded = parse_yaml(text, "x.yaml")
    if problem is None:
        resolve_references(loaded)
        return
    with pytest.raises(SpecError) as info:
        resolve_references(loaded)
    assert [str(p) for p in info.value.problems] == [problem]


def test_one_command_reads_and_parses_each_file_once_and_callers_get_copies(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With one `SpecFiles`, two specs extending one base read and parse it once, and a spec
    loaded twice is read once; what a caller gets is its own copy. Every use is still recorded for
    the validation cache. Without it (another command), a rewritten file is read again."""
    import framework.loader as loader
    from framework import validate_cache

    parsed: list[str] = []
    real = loader.parse_yaml
    monkeypatch.setattr(loader, "parse_yaml", lambda text, source: parsed.append(source) or real(text, source))
    _files(tmp_path, {"base.yaml": "name: b\nmodel: {type: mlp, hidden: [4]}\n",
                      "a.yaml": "extends: base.yaml\nseed: 1\n", "b.yaml": "extends: base.yaml\nseed: 2\n"})
    files = loader.SpecFiles()
    first = load_file(tmp_path / "a.yaml", files=files)
    first.data["model"]["hidden"].append(99)
    validate_cache.start_recording()
    second = load_file(tmp_path / "b.yaml", files=files)
    again = load_spec(tmp_path / "a.yaml", ["seed=3"], files=files)
    reads = validate_cache.stop_recording()
    assert second.data["model"] == {"type": "mlp", "hidden": [4]} and again.data["model"]["hidden"] == [4]
    assert again.data["seed"] == 3 and load_file(tmp_path / "a.yaml", files=files).data["seed"] == 1
    assert sorted(Path(s).name for s in parsed if s.endswith(".yaml")) == ["a.yaml", "b.yaml", "base.yaml"]
    assert sorted(Path(p).name for p in reads) == ["a.yaml", "b.yaml", "base.yaml"] and all(reads.values())
    (tmp_path / "base.yaml").write_text("name: c\nmodel: {type: mlp, hidden: [5]}\n")
    assert load_file(tmp_path / "a.yaml", files=files).data["model"]["hidden"] == [4]  # as this command read it
    assert load_file(tmp_path / "a.yaml").data["model"]["hidden"] == [5]


def test_a_spec_that_does_not_load_fails_alike_each_time_it_is_loaded(tmp_path: Path) -> None:
    """One command loading a broken spec twice gets the same problems, at the same places."""
    from framework.loader import SpecFiles

    _files(tmp_path, {"a.yaml": "extends: missing.yaml\n", "b.yaml": "a: [1\n"})
    files = SpecFiles()
    for name in ("a.yaml", "b.yaml"):
        first, second = (pytest.raises(SpecError), pytest.raises(SpecError))
        with first as one:
            load_file(tmp_path / name, files=files)
        with second as two:
            load_file(tmp_path / name, files=files)
        with pytest.raises(SpecError) as fresh:
            load_file(tmp_path / name)
        assert str(one.value) == str(two.value) == str(fresh.value)


def test_the_refused_characters_are_all_but_yaml_printable_ones() -> None:
    """A text is refused at a character YAML 1.1 does not call printable, at its line and column,
    and read when it holds only printable ones: every code point, each way."""
    import re

    printable = re.compile("[\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    chars = [chr(point) for point in range(0x110000)]
    accepted = "".join(c for c in chars if printable.match(c) and c not in '"\\')
    read = parse_yaml(f'a: "{accepted}"\n', "x.yaml").data["a"]
    assert set(accepted) - set(read) <= set("\t\n\r\x85\u2028\u2029")  # line breaks (and the tab after one) fold
    for char in (c for c in chars if not printable.match(c)):
        with pytest.raises(SpecError) as info:
            parse_yaml(f"a: x{char}\n", "x.yaml")
        assert [(p.mark.line, p.mark.column) for p in info.value.problems] == [(1, 5)], hex(ord(char))


def test_a_reference_through_a_non_ascii_digit_is_located() -> None:
    """`²` reads as a digit to `str.isdigit` and `int()`, but a key path's index is ASCII digits
    only (framework.errors.list_index): the reference is not found, at its line, never a crash."""
    loaded = parse_yaml("metrics: [{type: accuracy}]\ndescription: '${metrics.².type}'\n", "x.yaml")
    with pytest.raises(SpecError) as info:
        resolve_references(loaded)
    assert [str(p) for p in info.value.problems] == [
        "x.yaml:2:14: description: reference '${metrics.².type}' not found: 'metrics' is a list of 1 item(s); "
        "'²' is not one of its indices"]
