"""framework/spec.schema.json in the editor users have: the real yaml-language-server (npm, 2.x,
the server behind VS Code's YAML extension), driven over LSP (JSON-RPC on stdio) as an editor
drives it (tests/framework/lsp_client.py; the schema's editor view: framework/editor_schema.py).

- Every landed spec file (and fragment) gets no diagnostic: `extends:` children inherit `name`,
  `paper`, `type` and required arguments; `${...}` references are accepted where values go.
- A mistake is flagged at the line and column `exp validate` reports, in a complete spec and in a
  child that writes only what differs.
- Completion inside a component offers that component's arguments; hover shows an argument's
  description from the component's docstring.

Without the server these tests skip, except under `.ci/run` (EXPSPEC_CI=1), where they fail: CI
installs the server and must run them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from lsp_client import LanguageServer, server_command

from framework.spec_check import check_spec
from framework.discovery import spec_files
from framework.errors import SpecError
from framework.schema import SCHEMA_PATH

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("yaml_language_server")


@pytest.fixture(scope="module")
def server() -> Iterator[LanguageServer]:
    if server_command() is None:
        message = "yaml-language-server is not installed (npm install -g yaml-language-server@2)"
        if os.environ.get("EXPSPEC_CI") == "1":
            pytest.fail(f"{message}; .ci/run installs it, so CI must run these tests")
        pytest.skip(message)
    with LanguageServer(ROOT) as ls:
        yield ls


def _diagnose(server: LanguageServer, paths: list[Path]) -> dict[Path, list[tuple[int, int, str]]]:
    """path -> (line, column, message) of each diagnostic, 1-based as `exp validate` counts."""
    uris = {path: server.open(path) for path in paths}
    found = {}
    for path, uri in uris.items():
        found[path] = sorted((d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1, d["message"])
                             for d in server.wait_diagnostics(uri))
        server.close_document(uri)
    return found


def test_every_landed_spec_gets_no_diagnostic(server: LanguageServer) -> None:
    files = spec_files([ROOT / "specs"], claims=False)
    assert len(files) > 40
    modelines = {p: p.read_text().splitlines()[0] for p in files}
    assert all(line.startswith("# yaml-language-server: $schema=") for line in modelines.values())
    flagged = {str(p.relative_to(ROOT)): d for p, d in _diagnose(server, files).items() if d}
    assert flagged == {}


MODELINE = f"# yaml-language-server: $schema={SCHEMA_PATH}\n"
COMPLETE = """\
name: bad
paper: cvm_fairness
task: {type: classification}
data:
  type: synthetic_fair_tabular
  n_samples: 4000
  batch_size: 0
model:
  type: mlp
  hiden: [32]
  out_features: 2
optimizer: {type: adam, lr: fast}
metrics: [{type: accuracy}, {type: acuracy}]
trainer: {max_steps: 300, max_epoch: 3}
seed: ${seed_of_data}
"""
CHILD = f"""\
extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}
name: child
model: {{hidden: [16], dropout: 2}}
loss:
  terms:
    cvm: {{weight: -1}}
optimizer: {{lr: 1e-2, mommentum: 0.9}}
"""


@pytest.mark.parametrize("text", [COMPLETE, CHILD], ids=["complete spec", "extends child"])
def test_mistakes_are_flagged_where_exp_validate_reports_them(server: LanguageServer, tmp_path: Path,
                                                             text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(MODELINE + text)
    with pytest.raises(SpecError) as error:
        check_spec(path, [])
    reported = {(p.mark.line, p.mark.column) for p in error.value.problems
                if p.mark and p.mark.line and "reference" not in p.message}  # an editor cannot resolve references
    flagged = _diagnose(server, [path])[path]
    assert len(reported) >= 3
    assert {(line, column) for line, column, _ in flagged} == reported


def test_completion_offers_the_component_arguments_and_hover_describes_them(server: LanguageServer,
                                                                            tmp_path: Path) -> None:
    text = MODELINE + "name: x\npaper: cvm_fairness\ntask: {type: classification}\nmodel:\n  type: mlp\n" \
                      "  hidden: [32]\n  \noptimizer:\n  type: adamw\n  lr: 0.1\n"
    uri = server.open(tmp_path / "editing.yaml", text)
    server.wait_diagnostics(uri)
    labels = {item["label"] for item in server.completion(uri, 7, 2)}  # the blank line inside `model:`
    assert labels == {"in_features", "out_features", "activation", "dropout"}  # mlp's, less those written
    assert "Widths of the hidden layers, input side first" in server.hover(uri, 6, 4)  # on `hidden`
    assert "Learning rate" in server.hover(uri, 10, 3)  # on adamw's `lr`
    server.close_document(uri)
