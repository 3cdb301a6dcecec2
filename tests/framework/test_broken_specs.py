"""Broken and hostile specs: each is exit 2 with a located message, no traceback, bounded work.

Located: `file:line:col` where the text has a position, else the file's name (an empty file, a
symlink loop, a directory) or the override. Two parts:

- `CLASSES`: one case per class of broken input (issue 12), asserting the message;
- `generate`: a seeded generator that derives broken specs from every landed spec and claims file
  (each class, and generic mutations: a required key deleted, a wrong type, a misspelled key or
  component name, a bad override, a truncated file, invalid bytes), each broken by construction.

Both run through `framework.cli.main` (the `exp` entry point, in-process) inside one child process
per part, under a memory limit (RLIMIT_AS) and a per-case alarm, with a timeout on the child: a
regression to a hang or a memory blow-up fails a test instead of hanging or killing the suite.
No timing is asserted.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

import registry
from framework.discovery import spec_files
from framework.loader import load_file
from framework.schema_files import read_defs

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
SEED = 12
CASE_SECONDS = 60  # a hang guard per case, far above the milliseconds a case takes (even under load)
MEMORY_BYTES = 3 << 30

DRIVER = r"""
import contextlib, io, json, resource, signal, sys
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from framework.cli import main

class Hang(Exception):
    pass

def on_alarm(signum, frame):
    raise Hang()

signal.signal(signal.SIGALRM, on_alarm)
results = {}
for case_id, argv in json.load(open(sys.argv[1])).items():
    out = io.StringIO()
    signal.alarm(int(sys.argv[4]))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
    except Hang:
        code = "no answer within the per-case alarm"
    except SystemExit as error:
        code = error.code
    except BaseException as error:
        code = f"raised {type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
    results[case_id] = [code, out.getvalue()]
results["<torch imported>"] = "torch" in sys.modules
json.dump(results, open(sys.argv[2], "w"))
"""


@dataclass
class Case:
    """A broken input: files written under the work folder, the `exp` arguments, the regex the
    output must match where it names the place, and a text the message must contain."""

    id: str
    argv: list[str]
    where: str
    says: str
    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)


def run_cases(cases: list[Case], folder: Path, setup: Callable[[Path], None] | None = None) -> dict[str, Any]:
    """Write every case's files under `folder`, run all cases in one guarded child process (cwd
    `folder`), and return case id -> [exit code, output]."""
    if setup:
        setup(folder)
    for case in cases:
        for name, data in case.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        for name, target in case.links.items():
            os.symlink(target, folder / name)
    manifest, results = folder / "cases.json", folder / "results.json"
    manifest.write_text(json.dumps({c.id: c.argv for c in cases}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EXPSPEC_TRACEBACK": "0"}
    child = subprocess.run(
        [sys.executable, "-c", DRIVER, str(manifest), str(results), str(MEMORY_BYTES), str(CASE_SECONDS)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300 + 2 * len(cases),
    )
    assert child.returncode == 0, f"the child process failed (a crash?):\n{child.stdout[-3000:]}\n{child.stderr[-3000:]}"
    return json.loads(results.read_text())


def check(case: Case, result: list[Any]) -> list[str]:
    """What is wrong with a case's answer (empty: exit 2, located, says what it should)."""
    code, output = result
    wrong = []
    if code != 2:
        wrong.append(f"exit code {code!r}, expected 2")
    if "Traceback" in output:
        wrong.append("a traceback")
    if not re.search(case.where, output):
        wrong.append(f"no place matching {case.where!r}")
    if case.says not in output:
        wrong.append(f"does not say {case.says!r}")
    return [f"{case.id}: {', '.join(wrong)}\n    output: {output.strip()[:400]!r}"] if wrong else []


# -- one case per class ---------------------------------------------------------------------------

SPEC = """name: tiny
paper: cvm_fairness
seed: 0
task: {type: classification}
data: {type: synthetic_fair_tabular, n_samples: 600, seed: '${seed}', batch_size: 64}
model: {type: mlp, in_features: 6, hidden: [8], out_features: 2}
loss: {type: cross_entropy}
optimizer: {type: adam, lr: 0.01}
"""
STAGED = """name: staged
paper: cvm_fairness
task: {type: classification}
data: {type: synthetic_fair_tabular}
model: {type: mlp, in_features: 6, out_features: 2}
loss: {type: cross_entropy}
optimizer: {type: adam}
stages:
  first: {trainer: {max_steps: 2}}
  second: {init: {stage: first}}
"""
MINIMAX = """name: game
paper: perturbed_eg
task:
  type: minimax
  problem: {type: bilinear_game, dim: 2}
  algorithm:
data: {type: oracle_steps, num_steps: 10}
"""
CLAIMS = (SPECS / "cvm_fairness" / "claims.yaml").read_text()
ALLOWED_TAGS = "(allowed: plain values, or the tags !!str, !!int, !!float, !!bool, !!null, !!seq, !!map)"
LAUGHS = "[&a0 [x, x, x, x, x, x, x, x, x]" + "".join(f", &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)) + "]"
REFERENCES = "".join(f"r{i}: [{', '.join([repr('${r%d}' % (i - 1))] * 10)}]\n" for i in range(1, 8))


def _spec(line: str, old: str = "seed: 0") -> bytes:
    """SPEC with one line changed (`old` replaced by `line`)."""
    assert old in SPEC
    return SPEC.replace(old, line, 1).encode()


def _class(id: str, data: bytes | str | None, says: str, at: str, name: str = "s.yaml",
           argv: list[str] | None = None) -> Case:
    """A table case: file `name` holds `data` (None: no file); the output must contain `at` (the
    place: file:line:col, the file, or the override) and `says`. A claims file is written in a
    copy of its paper folder, with the specs it names."""
    folder = f"c{len(_FOLDERS)}/" if data is not None else ""  # each file in its own folder
    _FOLDERS.append(folder)
    files = {} if data is None else {folder + name: data.encode() if isinstance(data, str) else data}
    if name.endswith("claims.yaml"):
        files.update({f"{folder}cvm_fairness/{p.name}": p.read_bytes() for p in spec_files([SPECS / "cvm_fairness"], claims=False)})
    argv = [folder + a if a == name else a for a in argv or ["validate", name]]
    return Case(id, argv, re.escape(folder + at if at.startswith(name) else at), says, files)


_FOLDERS: list[str] = []


CLAIMS_FILE = "cvm_fairness/claims.yaml"
CLASSES = [
    _class("non-UTF-8 byte", _spec("seed: 0 # caf").replace(b"caf", b"caf\xe9"),
           "byte 0xe9 is not valid UTF-8; save the file as UTF-8", "s.yaml:3:14: "),
    _class("UTF-16 file", SPEC.encode("utf-16"), "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); "
           "save it as UTF-8", "s.yaml:1:1: "),
    _class("NUL character", _spec("seed: 0\x00"), "character U+0000 ('\\x00') is not allowed (is the file UTF-16, or "
           "not text?); YAML text has no control characters other than tab, newline and carriage return", "s.yaml:3:8: "),
    _class("control character", _spec("seed: \x1b[0m0"), "character U+001B ('\\x1b') is not allowed; YAML text has "
           "no control characters other than tab, newline and carriage return", "s.yaml:3:7: "),
    _class("integer of thousands of digits", _spec("seed: " + "7" * 5000), "seed: an integer of 5000 digits is out "
           "of range: a spec's integers lie between -2**63 and 2**64-1 (64 bits)", "s.yaml:3:7: "),
    _class("integer past 64 bits", _spec("seed: 18446744073709551616"), "seed: integer 18446744073709551616 is out "
           "of range", "s.yaml:3:7: "),
    _class("float overflow", _spec("lr: 1e400", "lr: 0.01"), "optimizer.lr: number 1e400 is too large for a "
           "64-bit float (at most about 1.8e308)", "s.yaml:8:29: "),
    _class("1e100 for an integer", _spec("n_samples: 1e100", "n_samples: 600"), "data.n_samples: expected an "
           "integer >= 10, got number 1e+100", "s.yaml:5:49: "),
    _class("!!int 'abc'", _spec("seed: !!int 'abc'"), "seed: cannot read 'abc' as !!int", "s.yaml:3:7: "),
    _class("!!bool maybe", _spec("seed: !!bool maybe"), "seed: cannot read 'maybe' as !!bool", "s.yaml:3:7: "),
    _class("!!timestamp x", _spec("seed: !!timestamp x"), f"seed: tag '!!timestamp' is not allowed in a spec {ALLOWED_TAGS}",
           "s.yaml:3:7: "),
    _class("!!binary", _spec("name: !!binary aGVsbG8=", "name: tiny"), "name: tag '!!binary' is not allowed",
           "s.yaml:1:7: "),
    _class("!!python tag", _spec("seed: !!python/object/apply:os.system ['true']"),
           "seed: tag '!!python/object/apply:os.system' is not allowed", "s.yaml:3:7: "),
    _class("extends: []", "extends: []\n" + SPEC, "extends: expected a file name or a non-empty list of file names, "
           "got []", "s.yaml:1:10: "),
    _class("extends a symlink loop", "extends: ../loop.yaml\n" + SPEC, "extends: base spec '../loop.yaml': cannot read "
           "the file: it is a symlink loop (too many levels of symbolic links)", "s.yaml:1:10: "),
    _class("symlink loop", None, "cannot read the file: it is a symlink loop (too many levels of symbolic links)",
           "loop.yaml: ", argv=["show", "loop.yaml"]),
    _class("directory as a spec", None, "is a directory, not a spec file", "folder.yaml: ", argv=["show", "folder.yaml"]),
    _class("empty file", b"", "file is empty (or only whitespace and comments): a spec is a mapping of sections "
           "with at least 'name', 'paper' and 'task'", "s.yaml: "),
    _class("whitespace-only file", b"  \n\t\n\n", "file is empty", "s.yaml: "),
    _class("comment-only file", b"# name: x\n# paper: y\n", "file is empty", "s.yaml: "),
    _class("empty claims file", b"# claims to come\n", "file is empty (or only whitespace and comments): a claims "
           "file is a mapping with 'paper', 'runs' and 'claims'", f"{CLAIMS_FILE}: ", name=CLAIMS_FILE),
    _class("null component argument", _spec("n_samples: null", "n_samples: 600"), "data.n_samples: expected an "
           "integer >= 10, got null (to use the default 6000, delete the key)", "s.yaml:5:49: "),
    _class("null node argument", MINIMAX, "task.algorithm: expected a minimax algorithm node, got null", "s.yaml:6:13: "),
    _class("recursive anchor", _spec("seed: &a [*a]"), "seed.0: this value contains itself (a recursive alias '*' "
           "inside its own anchor '&')", "s.yaml:3:1: "),
    _class("nesting 900 deep", _spec("seed: " + "[" * 900 + "]" * 900), "seed: nested deeper than 64 levels of "
           "lists and mappings (a spec nests at most 64)", "s.yaml:3:1: "),
    _class("nesting 50,000 deep", _spec("seed:\n" + "- " * 50_000 + "x"), "nested deeper than 64 levels", "s.yaml:4:"),
    _class("alias bomb", _spec(f"seed: {LAUGHS}"), "aliases ('*name') expand to more than 10000 values (an alias "
           "bomb?); write the values out, or use fewer aliases", "s.yaml:3:1: "),
    _class("alias bomb in a claims file", CLAIMS.replace("runs:", f"bomb: {LAUGHS}\nruns:", 1),
           "aliases ('*name') expand to more than 10000 values", f"{CLAIMS_FILE}:", name=CLAIMS_FILE),
    _class("alias bomb in an override", SPEC, "aliases ('*name') expand to more than 10000 values", "override 'seed=",
           argv=["show", "s.yaml", f"seed={LAUGHS}"]),
    _class("reference bomb", SPEC + "r0: [a, a, a, a, a, a, a, a, a, a]\n" + REFERENCES, "references ('${...}') "
           "expand to more than 10000 values (a reference bomb?)", "s.yaml:1"),
    _class("reference text bomb", SPEC + "t0: " + "x" * 100 + "\n" + "".join(
        f"t{i}: '{'${t%d}' % (i - 1) * 10}'\n" for i in range(1, 6)),
        "references ('${...}') make a string longer than 10000 characters (a reference bomb?)", "s.yaml:1"),
    _class("reference chain", SPEC + "".join(f"c{i}: ${{c{i + 1}}}\n" for i in range(100)) + "c100: 1\n",
           "c0: a chain of more than 64 references", "s.yaml:9:5: "),
    _class("name null in a staged spec", STAGED.replace("name: staged", "name: null"), "name: expected a non-empty "
           "string (stage runs are named '<name>/<stage>'), got null", "s.yaml:1:7: "),
    _class("name '' in a staged spec", STAGED.replace("name: staged", "name: ''"), "got ''", "s.yaml:1:7: "),
    _class("claims: 10**10**10", CLAIMS.replace("check: >-\n", "check: >-\n      10 ** 10 ** 10 > 0 or\n", 1),
           "'10 ** 10 ** 10': 10 ** 10000000000 is too large (more than about 1.8e308)", f"{CLAIMS_FILE}:",
           name=CLAIMS_FILE),
    _class("integer of thousands of digits in an override", SPEC, "an integer of 5000 digits is out of range",
           "override 'seed=7777", argv=["show", "s.yaml", "seed=" + "7" * 5000]),
    _class("control character in an override", SPEC, "character U+0007", "override 'seed=\x07': ",
           argv=["show", "s.yaml", "seed=\x07"]),
    _class("override path deeper than the limit", SPEC, "nested deeper than 64", "override 'data.x.x.",
           argv=["show", "s.yaml", "data." + "x." * 100 + "y=1"]),
    _class("unknown kind in exp list", SPEC, "unknown kind 'foo'", "error: ", argv=["list", "foo"]),
    _class("unknown component in exp explain", SPEC, "unknown loss 'zzz'", "error: ", argv=["explain", "loss.zzz"]),
]


def _class_setup(folder: Path) -> None:
    os.symlink("loop.yaml", folder / "loop.yaml")
    (folder / "folder.yaml").mkdir()


@pytest.fixture(scope="module")
def class_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_cases(CLASSES, tmp_path_factory.mktemp("classes"), _class_setup)


@pytest.mark.parametrize("case", CLASSES, ids=[c.id for c in CLASSES])
def test_each_class_is_a_located_exit_2(case: Case, class_results: dict[str, Any]) -> None:
    assert check(case, class_results[case.id]) == []


def test_validate_of_broken_input_imports_no_torch(class_results: dict[str, Any]) -> None:
    assert class_results["<torch imported>"] is False


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that cannot be opened (permissions): the file and the reason. Simulated, as root
    reads any file whatever its mode."""
    from framework import file_text
    from framework.cli import main

    (tmp_path / "s.yaml").write_text(SPEC)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(file_text, "open", refuse, raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "s.yaml"]) == 2
    assert "s.yaml: cannot read the file: permission denied" in capsys.readouterr().err


# -- the generator --------------------------------------------------------------------------------

SENTINEL = "ZZSENTINELZZ"
# Top-level node sections and the registry kind of their `type`.
NODE_KINDS = {"task": "tasks", "data": "data", "model": "models", "loss": "losses", "optimizer": "optimizers",
              "scheduler": "schedulers"}
SCHEMA = read_defs()
NAMES = {name for reg in registry.KINDS.values() for name in reg.names()}
INVALID_BYTES = [b"\xff", b"\xfe", b"\xc0", b"\xc1", b"\xf8"]  # never valid in UTF-8
CONTROLS = [c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)] + [0x7F, 0x80, 0x9B]


@dataclass
class Source:
    """A landed spec or claims file: where it is (relative to specs/), its bytes, and its data
    with `extends:` merged (references as written)."""

    rel: str
    data: bytes
    flat: dict[str, Any]

    @property
    def folder(self) -> str:
        return self.rel.split("/")[0]


def _leaves(data: Any, path: tuple = ()) -> list[tuple]:
    """Key paths of every scalar in `data`."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _leaves(v, (*path, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _leaves(v, (*path, i))]
    return [path]


def _keys(data: Any, path: tuple = ()) -> list[tuple]:
    """Key paths of every mapping key in `data`."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in [(*path, k), *_keys(v, (*path, k))]]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _keys(v, (*path, i))]
    return []


def _get(data: Any, path: tuple) -> Any:
    for part in path:
        data = data[part]
    return data


def _set(data: Any, path: tuple, value: Any) -> Any:
    data = copy.deepcopy(data)
    _get(data, path[:-1])[path[-1]] = value
    return data


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=False, width=1 << 16, allow_unicode=True)


def _with(data: Any, path: tuple, text: str) -> tuple[str, int, int]:
    """`data` dumped with the value at `path` written as `text`; the line and column of that value."""
    dumped = _dump(_set(data, path, SENTINEL))
    index = dumped.index(SENTINEL)
    line = dumped.count("\n", 0, index) + 1
    return dumped.replace(SENTINEL, text, 1), line, index - dumped.rfind("\n", 0, index)


def _ascii_position(rng: random.Random, data: bytes) -> int:
    """A random place between two ASCII bytes (nothing there completes a multi-byte character)."""
    while True:
        at = rng.randrange(1, len(data))
        if data[at - 1] < 0x80 and data[at] < 0x80:
            return at


def _line_col(data: bytes, at: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, at) + 1
    return data.count(b"\n", 0, at) + 1, len(data[line_start:at].decode()) + 1


def _scalar_leaf(rng: random.Random, flat: dict[str, Any], want: Callable[[Any], bool] = lambda v: True) -> tuple | None:
    """A random key path of a scalar in a mapping (not a list item: its dumped place is a key)."""
    leaves = [p for p in _leaves(flat) if p and isinstance(p[-1], str) and want(_get(flat, p))]
    return rng.choice(leaves) if leaves else None


def _accepts(prop: dict[str, Any], json_type: str) -> bool:
    return prop.get("type") == json_type or any(_accepts(m, json_type) for m in prop.get("anyOf", []))


def _node_arguments(flat: dict[str, Any]) -> list[tuple[tuple, dict[str, Any]]]:
    """(key path, committed schema) of every argument written in a top-level component node."""
    found = []
    for section, kind in NODE_KINDS.items():
        node = flat.get(section)
        if isinstance(node, dict) and f"{kind}.{node.get('type')}" in SCHEMA:
            properties = SCHEMA[f"{kind}.{node['type']}"]["properties"]
            found += [((section, key), properties[key]) for key in node if key != "type" and key in properties]
    return found


# A mutation: (rng, source) -> (the broken file's bytes, what follows the file's name where the
# output names the place (a regex), a text the message must contain), or None where it does not apply.
Mutation = Callable[[random.Random, Source], "tuple[bytes, str, str] | None"]


def m_invalid_byte(rng: random.Random, src: Source) -> Any:
    at = _ascii_position(rng, src.data)
    byte = rng.choice(INVALID_BYTES)
    line, col = _line_col(src.data, at)
    return src.data[:at] + byte + src.data[at:], f":{line}:{col}: ", f"byte 0x{byte[0]:02x} is not valid UTF-8"


def m_control(rng: random.Random, src: Source) -> Any:
    at = _ascii_position(rng, src.data)
    char = chr(rng.choice(CONTROLS))
    line, col = _line_col(src.data, at)
    return src.data[:at] + char.encode() + src.data[at:], f":{line}:{col}: ", f"character U+{ord(char):04X}"


def m_byte_flips(rng: random.Random, src: Source) -> Any:
    """Several bytes replaced by bytes that are no UTF-8 or control characters: the first is reported."""
    data = bytearray(src.data)
    places = sorted(_ascii_position(rng, src.data) for _ in range(rng.randint(2, 6)))
    for at in places:
        data[at] = rng.choice([0xFF, 0xFE, 0x00, 0x01, 0x1B, 0x7F])
    first = places[0]
    line, col = _line_col(bytes(src.data), first)
    says = "is not valid UTF-8" if data[first] >= 0x80 else f"character U+{data[first]:04X}"
    if any(data[at] >= 0x80 for at in places) and data[first] < 0x80:
        says, col = "is not valid UTF-8", None  # bytes are decoded before characters are checked
    return bytes(data), f":{line}:{col}: " if col else r":\d+:\d+: ", says


def m_utf16(rng: random.Random, src: Source) -> Any:
    encoding = rng.choice(["utf-16", "utf-32"])
    return src.data.decode().encode(encoding), ":1:1: ", f"the file is {encoding.upper()} text"


def m_empty(rng: random.Random, src: Source) -> Any:
    data = rng.choice([b"", b"\n\n  \n", b"\t \n", b"# " + src.data.split(b"\n")[0] + b"\n# nothing else\n"])
    return data, ": ", "file is empty (or only whitespace and comments)"


def m_truncated(rng: random.Random, src: Source) -> Any:
    """Cut inside a flow collection (`[` or `{` that starts one, before its closer): invalid YAML."""
    text = src.data.decode()
    openers = [m.end() for m in re.finditer(r"(?:^\s*|: |- |\[|\{|, )([\[{])(?=[^\n]*[\]}])", text, re.M)]
    if not openers:
        return None
    at = rng.choice(openers)
    closer = min(i for i in (text.find("]", at), text.find("}", at)) if i >= 0)
    cut = text[:at + rng.randrange(max(1, closer - at))]
    try:  # a bracket inside a block scalar (a claim's prose) is no flow collection: the cut may still parse
        yaml.safe_load(cut)
    except yaml.YAMLError:
        return cut.encode(), r":\d+:\d+: ", "invalid YAML"
    return None


def _sentinel_case(rng: random.Random, src: Source, text: str, says: str,
                   want: Callable[[Any], bool] = lambda v: True, located: bool = True) -> Any:
    leaf = _scalar_leaf(rng, src.flat, want)
    if leaf is None:
        return None
    dumped, line, col = _with(src.flat, leaf, text)
    return dumped.encode(), f":{line}:{col}: " if located else f":{line}:", says


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def m_bigint(rng: random.Random, src: Source) -> Any:
    digits = rng.randint(41, 6000)
    return _sentinel_case(rng, src, "9" * digits, f"an integer of {digits} digits is out of range", _is_int)


def m_float_overflow(rng: random.Random, src: Source) -> Any:
    text = f"{rng.choice(['', '-'])}1e{rng.randint(309, 100000)}"
    return _sentinel_case(rng, src, text, "is too large for a 64-bit float")


def m_tag(rng: random.Random, src: Source) -> Any:
    tag, text, says = rng.choice([
        ("!!int", "!!int 'abc'", "cannot read 'abc' as !!int"),
        ("!!float", "!!float x1", "cannot read 'x1' as !!float"),
        ("!!bool", "!!bool maybe", "cannot read 'maybe' as !!bool"),
        ("!!timestamp", "!!timestamp x", "tag '!!timestamp' is not allowed"),
        ("!!timestamp", "!!timestamp 2024-01-01", "tag '!!timestamp' is not allowed"),
        ("!!binary", "!!binary aGVsbG8=", "tag '!!binary' is not allowed"),
        ("!!set", "!!set {a: null}", "tag '!!set' is not allowed"),
        ("!!omap", "!!omap [a: 1]", "tag '!!omap' is not allowed"),
        ("!!python", "!!python/object/apply:os.system ['true']", "tag '!!python/object/apply:os.system' is not allowed"),
        ("local", "!local x", "tag '!local' is not allowed"),
    ])
    return _sentinel_case(rng, src, text, says)


def m_deep(rng: random.Random, src: Source) -> Any:
    levels = rng.choice([65 + rng.randint(0, 20), 900, 5000, 40_000])
    opener, closer = rng.choice([("[", "]"), ("{a: ", "}")])
    return _sentinel_case(rng, src, opener * levels + "1" + closer * levels, "nested deeper than 64 levels", located=False)


def m_recursive(rng: random.Random, src: Source) -> Any:
    return _sentinel_case(rng, src, rng.choice(["&r [*r]", "&r {a: *r}", "&r [1, [2, *r]]"]), "this value contains itself",
                          located=False)


def m_alias_bomb(rng: random.Random, src: Source) -> Any:
    width = rng.randint(4, 10)
    levels = 12 if width < 6 else 9
    bomb = "[&a0 [" + ", ".join(["x"] * width) + "]" + "".join(
        f", &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)) + "]"
    return _sentinel_case(rng, src, bomb, "aliases ('*name') expand to more than 10000 values", located=False)


def m_reference_bomb(rng: random.Random, src: Source) -> Any:
    text = _dump(src.flat) + "zz0: [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"zz{i}: [{', '.join([repr('${zz%d}' % (i - 1))] * 10)}]\n" for i in range(1, 8))
    return text.encode(), r":\d+:\d+: ", "references ('${...}') expand to more than 10000 values"


def m_extends_empty(rng: random.Random, src: Source) -> Any:
    text = src.data.decode()
    value = rng.choice(["[]", "''", "[a.yaml, 3]", "{a: b}"])
    if re.search(r"^extends:.*$", text, re.M):
        text = re.sub(r"^extends:.*$", f"extends: {value}", text, count=1, flags=re.M)
    else:
        text = f"extends: {value}\n" + text
    line = text[:text.index("extends:")].count("\n") + 1
    return text.encode(), f":{line}:10: ", "expected a file name or a non-empty list of file names"


def _set_by_a_stage(flat: dict[str, Any], path: tuple) -> bool:
    """Whether a stage of the spec writes `path` too: a stage is validated merged onto the top
    level, so a top-level value a stage merges onto is reported where the merged node is wrong (the
    stage's line: `stages.<name>.task.analysis: a analysis node needs a 'type' key`)."""
    for stage in (flat.get("stages") or {}).values():
        node = stage
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return True
    return False


def m_null_argument(rng: random.Random, src: Source) -> Any:
    """An argument that does not accept None left empty (one no stage writes too); or the `task`
    section itself."""
    arguments = [(p, prop) for p, prop in _node_arguments(src.flat)
                 if not _accepts(prop, "null") and not _set_by_a_stage(src.flat, p)]
    if "task" in src.flat and "stages" not in src.flat and (not arguments or rng.random() < 0.25):
        dumped, line, col = _with(src.flat, ("task",), "null")
        return dumped.encode(), f":{line}:{col}: ", "task: expected a task node"
    if not arguments:
        return None
    path, prop = rng.choice(arguments)
    dumped, line, col = _with(src.flat, path, rng.choice(["null", "", "~"]))
    return dumped.encode(), f":{line}:", f"{'.'.join(path)}: expected "


def m_integer_as_float(rng: random.Random, src: Source) -> Any:
    arguments = [(p, prop) for p, prop in _node_arguments(src.flat)
                 if _accepts(prop, "integer") and not _accepts(prop, "number") and not _accepts(prop, "string")]
    if not arguments:
        return None
    path, _ = rng.choice(arguments)
    dumped, line, col = _with(src.flat, path, rng.choice(["1e100", "1.0e+19", "4.0"]))
    return dumped.encode(), f":{line}:{col}: ", f"{'.'.join(path)}: expected an integer"


def m_name(rng: random.Random, src: Source) -> Any:
    if "name" not in src.flat:
        return None
    text = rng.choice(["null", "''", "!!binary aGVsbG8=", "[a]"])
    dumped, line, col = _with(src.flat, ("name",), text)
    return dumped.encode(), f":{line}:{col}: ", "name: "


def m_delete_required(rng: random.Random, src: Source) -> Any:
    stages = src.flat.get("stages") if isinstance(src.flat.get("stages"), dict) else {}
    in_stage = {k for body in stages.values() if isinstance(body, dict) for k in body}
    required = [k for k in ("name", "paper", "task") if k in src.flat and k not in in_stage]
    nodes = [p for p in _keys(src.flat) if p[-1] == "type" and isinstance(_get(src.flat, p), str)
             and "sweep" not in p and "stages" not in p]
    choice = rng.choice(required + nodes)
    if isinstance(choice, str):
        data = {k: v for k, v in src.flat.items() if k != choice}
        says = f"is missing required key '{choice}'"
    else:
        data = copy.deepcopy(src.flat)
        del _get(data, choice[:-1])["type"]
        says = "'type'"  # "needs a 'type' key" or, for a term, "has no 'type'"
    return _dump(data).encode(), r":\d+:\d+: ", says


def m_wrong_type(rng: random.Random, src: Source) -> Any:
    """A number replaced by text, or text by a list: no argument typed as a number takes text."""
    leaf = _scalar_leaf(rng, src.flat, lambda v: (_is_int(v) or isinstance(v, float)) or
                        isinstance(v, str) and "${" not in v)
    if leaf is None:
        return None
    old = _get(src.flat, leaf)
    if isinstance(old, str) and "sweep" not in leaf:
        text = "[1, 2]" if leaf[-1] != "type" else "{type: mlp}"
    elif isinstance(old, str) or leaf[:2] == ("sweep", "random"):
        return None
    else:
        text = "not-a-number"
    dumped, line, col = _with(src.flat, leaf, text)
    return dumped.encode(), r":\d+:\d+: ", "expected"


def _misspell(rng: random.Random, word: str) -> str:
    for _ in range(20):
        i = rng.randrange(len(word))
        candidates = [word[:i] + word[i + 1:], word[:i] + word[i] + word[i:], word[:i] + "q" + word[i:]]
        if i + 1 < len(word):
            candidates.append(word[:i] + word[i + 1] + word[i] + word[i + 2:])
        new = rng.choice(candidates)
        if new != word and new and new not in NAMES:
            return new
    return word + "q"


def _closed_keys(src: Source) -> list[tuple]:
    """Keys whose misspelling is an error: a spec's sections, their fields, and arguments of
    components that take no **kwargs (not term or stage names, which are the user's)."""
    keys = []
    for path in _keys(src.flat):
        parent = _get(src.flat, path[:-1])
        if path[-2:-1] in (("terms",), ("stages",)) or (len(path) > 1 and path[-2] in ("grid", "zip", "params")):
            continue
        if isinstance(parent, dict) and "type" in parent:
            kinds = [k for k in SCHEMA if k.endswith(f".{parent['type']}") and not k.startswith(("node.", "term."))]
            if any(SCHEMA[k].get("additionalProperties") for k in kinds):
                continue
        keys.append(path)
    return keys


def m_misspelled_key(rng: random.Random, src: Source) -> Any:
    keys = _closed_keys(src)
    if not keys:
        return None
    path = rng.choice(keys)
    data = copy.deepcopy(src.flat)
    parent = _get(data, path[:-1])
    new = _misspell(rng, path[-1])
    while new in parent:
        new += "q"
    data_parent = {new if k == path[-1] else k: v for k, v in parent.items()}
    data = data_parent if len(path) == 1 else _set(data, path[:-1], data_parent)
    return _dump(data).encode(), r":\d+:\d+: ", ""


def m_misspelled_component(rng: random.Random, src: Source) -> Any:
    paths = [p for p in _keys(src.flat) if p[-1] == "type" and isinstance(_get(src.flat, p), str)]
    if not paths:
        return None
    path = rng.choice(paths)
    dumped, line, col = _with(src.flat, path, _misspell(rng, _get(src.flat, path)))
    return dumped.encode(), r":\d+:\d+: ", "unknown "


OVERRIDES = [
    ("nmae=x", "the spec has no key 'nmae'"),
    ("trainer.max_stepz=5", "section 'trainer' has no key 'max_stepz'"),
    ("seed=abc", "expected an integer"),
    ("seed=" + "9" * 4400, "an integer of 4400 digits is out of range"),
    ("seed=1e400", "is too large for a 64-bit float"),
    ("seed=[1", "invalid YAML"),
    ("seed=!!binary aGVsbG8=", "tag '!!binary' is not allowed"),
    ("seed=\x00", "character U+0000"),
    ("seed=\udcff", "byte 0xff is not valid UTF-8"),
    ("seed=&a [*a]", "this value contains itself"),
    (f"seed={LAUGHS}", "aliases ('*name') expand to more than 10000 values"),
    ("seed=" + "[" * 3000 + "]" * 3000, "nested deeper than 64"),
    ("x." * 80 + "y=1", "nested deeper than 64"),
    ("=5", "expected key.path=value"),
    ("extends=x.yaml", "'extends' cannot be overridden"),
    ("metrics.99.type=accuracy", "index '99' is not valid"),
    ("task.type=classificaton", "unknown task 'classificaton'"),
    ("seed=${seed}", "reference cycle"),
]


def override_case(rng: random.Random, src: Source, name: str) -> Case:
    override, says = rng.choice(OVERRIDES)
    if override.startswith(("metrics.", "task.")) and ("stages" in src.flat or not isinstance(src.flat.get("metrics"), list)):
        override, says = OVERRIDES[0]  # no list of metrics; or stages whose own `task` replaces the top level's
    return Case(f"{src.rel}: override {override[:40]!r}", ["show", name, override], re.escape("override '"), says)


SPEC_MUTATIONS: list[Mutation] = [
    m_invalid_byte, m_control, m_byte_flips, m_utf16, m_empty, m_truncated, m_bigint, m_float_overflow, m_tag,
    m_deep, m_recursive, m_alias_bomb, m_reference_bomb, m_extends_empty, m_null_argument, m_integer_as_float,
    m_name, m_delete_required, m_wrong_type, m_misspelled_key, m_misspelled_component,
]
CLAIMS_MUTATIONS: list[Mutation] = [
    m_invalid_byte, m_control, m_utf16, m_empty, m_truncated, m_bigint, m_tag, m_deep, m_alias_bomb, m_recursive,
]
PER_SPEC = 5


def m_power(rng: random.Random, src: Source) -> Any:
    """A claim's check that asks for a number past a float's range, or a list past MAX_SEQUENCE."""
    paths = [p for p in _leaves(src.flat) if p and p[-1] == "check"]
    path = rng.choice(paths)
    text = rng.choice(["10 ** 10 ** 10 > 1", "9 ** 9 ** 9 > 1", "2.0 ** 5000 > 1", "len([0] * 10 ** 7) > 1"])
    dumped, line, col = _with(src.flat, path, repr(text) if "len" not in text else repr(text.replace("len", "mean")))
    return dumped.encode(), f":{line}:{col}: ", "too large" if "len" not in text else "makes more than"


@functools.lru_cache(maxsize=1)
def sources() -> tuple[Source, ...]:
    found = []
    for path in spec_files([SPECS]):
        found.append(Source(str(path.relative_to(SPECS)), path.read_bytes(), load_file(path).data))
    return tuple(found)


def generate(seed: int) -> list[Case]:
    """Broken cases derived from every landed spec and claims file: PER_SPEC mutations per spec
    (rotating through every class, so each applies to many specs), and one override per spec;
    claims files get every claims mutation. Files are written next to the originals' copies
    (`g<n>_<name>`), so `extends:` and `init: {spec}` find their siblings."""
    rng = random.Random(seed)
    cases: list[Case] = []
    specs = sources()
    for n, src in enumerate(specs):
        claims = src.rel.endswith("claims.yaml")
        mutations = [*CLAIMS_MUTATIONS, m_power] if claims else \
            [SPEC_MUTATIONS[(n * PER_SPEC + k) % len(SPEC_MUTATIONS)] for k in range(PER_SPEC)]
        for k, mutation in enumerate(mutations):
            made = mutation(rng, src)
            if made is None:
                continue
            data, where, says = made
            if claims:  # checked in its own copy of the paper folder, as claims.yaml
                name = f"claims{n}_{k}/{src.rel}"
                files = {name: data, **{f"claims{n}_{k}/{s.rel}": s.data for s in specs
                                        if s.folder == src.folder and s.rel != src.rel}}
            else:
                name = f"specs/{src.folder}/g{n}_{k}_{Path(src.rel).name}"
                files = {name: data}
            cases.append(Case(f"{src.rel}: {mutation.__name__} #{k}", ["validate", name],
                              re.escape(name) + where, says, files))
        if not claims:
            cases.append(override_case(rng, src, f"specs/{src.rel}"))
    for folder in sorted({s.folder for s in specs}):
        loop = f"specs/{folder}/loop_a.yaml"
        cases.append(Case(f"{folder}: symlink loop", ["validate", loop], re.escape(loop) + ": ", "symlink loop",
                          links={loop: "loop_b.yaml", f"specs/{folder}/loop_b.yaml": "loop_a.yaml"}))
        child = f"specs/{folder}/extends_loop.yaml"
        cases.append(Case(f"{folder}: extends a symlink loop", ["validate", child], re.escape(child) + ":1:10: ",
                          "symlink loop", {child: b"extends: loop_a.yaml\nname: x\n"}))
        cases.append(Case(f"{folder}: a directory", ["show", f"specs/{folder}"], re.escape(f"specs/{folder}: "),
                          "is a directory, not a spec file"))
    return cases


def _copy_specs(folder: Path) -> None:
    for path in SPECS.rglob("*"):
        if path.is_file():
            target = folder / "specs" / path.relative_to(SPECS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def test_generator_is_seeded_and_large() -> None:
    first, second = generate(SEED), generate(SEED)
    assert [(c.id, c.files) for c in first] == [(c.id, c.files) for c in second]
    assert len(first) >= 300
    kinds = {c.id.split(": ")[1].split(" #")[0].split(" '")[0] for c in first}
    every = {m.__name__ for m in [*SPEC_MUTATIONS, *CLAIMS_MUTATIONS, m_power]} | {"override", "symlink loop",
                                                                                  "extends a symlink loop", "a directory"}
    assert every <= kinds, f"classes no case covers: {sorted(every - kinds)}"


def test_generated_broken_specs(tmp_path: Path) -> None:
    cases = generate(SEED)
    results = run_cases(cases, tmp_path, _copy_specs)
    wrong = [line for case in cases for line in check(case, results[case.id])]
    assert not wrong, f"{len(wrong)} of {len(cases)} generated cases:\n" + "\n".join(wrong[:40])
    assert results["<torch imported>"] is False


def test_unknown_run_id_is_a_usage_mistake(tracked: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`exp resume`/`exp rerun` of a run the store does not hold: exit 2 like any mistake in what
    was asked (it was 1, an internal SystemExit)."""
    from framework.cli import main

    for command in ("resume", "rerun"):
        assert main([command, "no-such-run"]) == 2
        assert "error: no run 'no-such-run' in " in capsys.readouterr().err
