"""Value ranges: `Annotated` bounds in signatures (framework/schema.py) and section fields
(framework/spec.py), checked by `exp validate` with plain messages (framework/validate.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from annotated_types import Ge, Gt, Interval, Le, Lt, MaxLen, MinLen, MultipleOf
from pydantic import Field

from components.types import NonNegativeInt, PositiveFloat, PositiveInt, Probability, ProperFraction
from framework.errors import SpecError
from framework.loader import load_spec
from framework.arguments import argument_problem
from framework.schema import CommittedSchemas, LiveSchemas, type_schema
from framework.schema_files import read_defs
from framework.validate import validate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("annotation, schema", [
    (PositiveInt, {"type": "integer", "minimum": 1}),
    (NonNegativeInt, {"type": "integer", "minimum": 0}),
    (PositiveFloat, {"type": "number", "exclusiveMinimum": 0}),
    (Probability, {"type": "number", "minimum": 0, "maximum": 1}),
    (ProperFraction, {"type": "number", "minimum": 0, "exclusiveMaximum": 1}),
    (Annotated[float, Le(2), Lt(3)], {"type": "number", "maximum": 2, "exclusiveMaximum": 3}),
    (Annotated[int, Ge(16), MultipleOf(16)], {"type": "integer", "minimum": 16, "multipleOf": 16}),
    (Annotated[float, Interval(gt=0, le=1)], {"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
    (Annotated[int, Field(ge=1)], {"type": "integer", "minimum": 1}),  # pydantic's spelling too
    (Annotated[list[int], MinLen(1), MaxLen(3)], {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
    (Annotated[str, Field(min_length=1)], {"type": "string", "minLength": 1}),
    (PositiveInt | None, {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}),
    (Annotated[int | None, Gt(0)], {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]}),
    (list[PositiveInt], {"type": "array", "items": {"type": "integer", "minimum": 1}}),
    (Annotated[bool, Ge(1)], {"type": "boolean"}),  # a bound on a type without one is ignored
    (Annotated[int, "a note"], {"type": "integer"}),  # metadata that is no constraint is ignored
])
def test_constraints_become_json_schema_bounds(annotation: Any, schema: dict) -> None:
    assert type_schema(annotation) == schema


@pytest.mark.parametrize("annotation, value, problem", [
    (PositiveInt, 0, "must be >= 1, got integer 0"),
    (PositiveInt, 1, None),
    (NonNegativeInt, -1, "must be >= 0, got integer -1"),
    (NonNegativeInt, 0, None),
    (PositiveFloat, 0.0, "must be > 0, got number 0.0"),
    (PositiveFloat, 1e-300, None),
    (Probability, 1.5, "must be >= 0 and <= 1, got number 1.5"),
    (Probability, 1.0, None),
    (Probability, 0, None),
    (ProperFraction, 1.0, "must be >= 0 and < 1, got number 1.0"),
    (ProperFraction, 0.0, None),
    (ProperFraction, float("nan"), "must be >= 0 and < 1, got number nan"),  # NaN passes no bound
    (PositiveFloat, float("inf"), None),
    (Annotated[int, MultipleOf(8)], 12, "must be a multiple of 8, got integer 12"),
    (Annotated[list[int], MinLen(1)], [], "must have at least 1 item(s), got list []"),
    # An integer is a YAML integer: a float, however whole or large, is not silently a size.
    (PositiveInt, 1e100, "expected an integer >= 1, got number 1e+100"),
    (PositiveInt, 8.0, "expected an integer >= 1, got number 8.0"),
    (PositiveInt, True, "expected an integer >= 1, got boolean true"),
    (PositiveInt | None, 0, "must be >= 1, got integer 0"),  # the union member of the value's type says why
    (PositiveInt | None, "x", "expected an integer >= 1 or null, got string 'x'"),
])
def test_argument_problem_says_the_rule(annotation: Any, value: Any, problem: str | None) -> None:
    found = argument_problem(value, type_schema(annotation))
    assert (found[1] if found else None) == problem


def test_list_items_are_located() -> None:
    assert argument_problem([4, 0, 2], type_schema(list[PositiveInt])) == ((1,), "must be >= 1, got integer 0")


SPEC = """\
name: t
paper: demo
task: {type: classification}
data: {type: synthetic_classification, n_features: 4, batch_size: 64}
model: {type: mlp, in_features: 4, out_features: 2, hidden: [8]}
optimizer: {type: adam, lr: 1.0e-3}
hardware: {devices: 1}
trainer: {max_steps: 10}
"""


@pytest.mark.parametrize("old, new, message", [
    ("batch_size: 64", "batch_size: 0", "s.yaml:4:67: data.batch_size: must be >= 1, got integer 0"),
    ("batch_size: 64", "batch_size: 1e100", "s.yaml:4:67: data.batch_size: expected an integer >= 1, got number 1e+100"),
    ("lr: 1.0e-3", "lr: -1", "s.yaml:6:29: optimizer.lr: must be > 0, got integer -1"),
    ("hidden: [8]", "hidden: [8, 0]", "s.yaml:5:65: model.hidden.1: must be >= 1, got integer 0"),
    ("max_steps: 10", "max_steps: -5", "s.yaml:8:22: trainer.max_steps: expected an integer >= 1 or -1, got integer -5"),
    ("max_steps: 10", "max_steps: 0", "s.yaml:8:22: trainer.max_steps: expected an integer >= 1 or -1, got integer 0"),
    ("max_steps: 10", "max_epochs: 0", "s.yaml:8:23: trainer.max_epochs: expected an integer >= 1 or -1 or null, got integer 0"),
    ("max_steps: 10", "max_steps: 1.0e+100",
     "s.yaml:8:22: trainer.max_steps: expected an integer >= 1 or -1, got number 1e+100"),
    ("max_steps: 10", "limit_val_batches: 1.5",
     "s.yaml:8:30: trainer.limit_val_batches: expected an integer >= 0 or a number >= 0 and <= 1 or null, got number 1.5"),
    ("max_steps: 10", "log_every_n_steps: -1", "s.yaml:8:30: trainer.log_every_n_steps: must be >= 0, got integer -1"),
    ("devices: 1", "devices: 0", "s.yaml:7:21: hardware.devices: expected an integer >= 1 or -1 or 'auto' or a list of "
                                 "(an integer >= 0) with at least 1 item(s), got integer 0"),
    ("devices: 1", "threads: 0", "s.yaml:7:21: hardware.threads: must be >= 1, got integer 0"),
], ids=["batch_size 0", "batch_size 1e100", "lr", "hidden item", "max_steps -5", "max_steps 0", "max_epochs 0",
        "max_steps float", "limit fraction", "log cadence", "devices 0", "threads 0"])
def test_out_of_range_values_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str,
                                         message: str) -> None:
    monkeypatch.chdir(tmp_path)
    text = SPEC.replace(old, new, 1)
    assert text != SPEC
    Path("s.yaml").write_text(text)
    for schemas in (CommittedSchemas(), LiveSchemas()):  # `exp validate` and `exp run` apply the same ranges
        with pytest.raises(SpecError) as info:
            validate(load_spec("s.yaml"), schemas)
        assert [str(p) for p in info.value.problems] == [message]


@pytest.mark.parametrize("edge", [
    "devices: -1", "devices: auto", "devices: [0]", "devices: 1, threads: 1",
])
def test_edge_values_of_sections_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edge: str) -> None:
    monkeypatch.chdir(tmp_path)
    text = SPEC.replace("devices: 1", edge).replace(
        "max_steps: 10", "max_steps: -1, max_epochs: 1, limit_val_batches: 0, limit_train_batches: 1.0, "
                         "val_check_interval: 1, num_sanity_val_steps: -1, log_every_n_steps: 0, gradient_clip_val: 0")
    Path("s.yaml").write_text(text)
    operative = validate(load_spec("s.yaml"), CommittedSchemas())
    assert operative["trainer"]["max_steps"] == -1 and operative["trainer"]["num_sanity_val_steps"] == -1


def test_init_checkpoint_must_exist_relative_to_the_working_directory(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "s.yaml"
    spec.write_text(SPEC + "init: {checkpoint: weights.ckpt}\n")
    (tmp_path / "specs" / "weights.ckpt").write_bytes(b"")  # beside the spec: not where the runner looks
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as info:
        validate(load_spec(str(spec)), CommittedSchemas())
    assert [str(p) for p in info.value.problems] == [
        f"specs/s.yaml:9:20: init.checkpoint: file not found: weights.ckpt (a relative path is read from the current "
        f"directory, {tmp_path}, not the spec's folder)"]
    (tmp_path / "weights.ckpt").write_bytes(b"")
    assert validate(load_spec(str(spec)), CommittedSchemas())["init"]["checkpoint"] == "weights.ckpt"
    spec.write_text(SPEC + f"init: {{checkpoint: {tmp_path}/gone.ckpt}}\n")
    with pytest.raises(SpecError) as info:
        validate(load_spec(str(spec)), CommittedSchemas())
    assert str(info.value.problems[0]).endswith(f"init.checkpoint: file not found: {tmp_path}/gone.ckpt")


def test_exp_validate_rejects_ranges_without_importing_torch(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SPEC.replace("batch_size: 64", "batch_size: 0").replace("lr: 1.0e-3", "lr: -1")
                   .replace("max_steps: 10", "max_steps: -5").replace("devices: 1", "devices: 0"))
    code = (
        "import sys\nfrom framework.cli import main\n"
        f"rc = main(['validate', {str(bad)!r}])\n"
        "heavy = sorted(m for m in ('torch', 'lightning', 'mlflow', 'torchmetrics') if m in sys.modules)\n"
        "print('heavy:', heavy)\nsys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "heavy: []"
    for line in (f"{bad}:4:67: data.batch_size: must be >= 1, got integer 0",
                 f"{bad}:6:29: optimizer.lr: must be > 0, got integer -1",
                 f"{bad}:7:21: hardware.devices: expected an integer >= 1 or -1",
                 f"{bad}:8:22: trainer.max_steps: expected an integer >= 1 or -1, got integer -5"):
        assert line in out.stderr
    assert "Traceback" not in out.stderr


def test_committed_schema_carries_the_bounds() -> None:
    defs = read_defs()
    assert defs["data.synthetic_classification"]["properties"]["batch_size"]["minimum"] == 1
    assert defs["models.mlp"]["properties"]["hidden"]["items"]["minimum"] == 1
    assert defs["optimizers.adam"]["properties"]["lr"]["exclusiveMinimum"] == 0
    assert defs["Trainer"]["properties"]["max_steps"]["anyOf"] == [
        {"minimum": 1, "type": "integer"}, {"const": -1, "type": "integer"}]


# Arguments that count or size something: integers that must be >= some bound (a seed is not one).
SIZE_LIKE = re.compile(r"(^|_)(size|sizes|features|channels|dim|dim_y|d_in|d_model|width|depth|hidden|steps|layers|"
                       r"heads|samples|latents|len|replicates|repeats|rescalings|copies|candidates|initial|rounds|"
                       r"workers|groups|classes|targets|informative|tokens|chars|period|subset|k|repeat|limit|"
                       r"horizons|decade|batches|calls|ratio)$|^n_|^num_")


def _integers(schema: dict) -> list[dict]:
    if schema.get("type") == "integer":
        return [schema]
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return _integers(schema["items"])
    return [i for member in schema.get("anyOf", []) for i in _integers(member)]


def test_every_size_like_integer_of_our_components_has_a_bound() -> None:
    """Components of this repository state the range of every integer that counts or sizes
    something. Third-party targets (Lightning's callbacks) keep the signature their library has."""
    defs = read_defs()
    unbounded = [f"{key}.{name}" for key, node in defs.items()
                 if str(node.get("x-target", "")).startswith("components.") and not key.startswith("term.")
                 for name, prop in node["properties"].items()
                 if SIZE_LIKE.search(name) and "seed" not in name
                 and any("minimum" not in i and "exclusiveMinimum" not in i for i in _integers(prop))]
    assert unbounded == []
