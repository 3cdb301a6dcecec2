"""Components from outside this repository: an installed package's `expspec.components` entry point.

The test builds a tiny plugin distribution, installs it with pip into a folder of its own (the
test environment stays untouched), and runs `exp` with that folder on the path, as a lab would
after `pip install lab-components`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "lab-components"
        version = "0.1.0"

        [project.entry-points."expspec.components"]
        lab = "lab_components.expspec"

        [tool.setuptools]
        packages = ["lab_components"]
    """,
    "lab_components/__init__.py": '"""Components of a lab."""\n',
    # Data, as in this repository's families: no import, so `exp validate` stays torch-free.
    "lab_components/expspec.py": """
        ENTRIES = {"models": {"lab_linear": "lab_components.models:LabLinear"}}
    """,
    "lab_components/models.py": '''
        from torch import nn


        class LabLinear(nn.Module):
            """One linear layer, scaled.

            Args:
                in_features: Input width.
                out_features: Output width.
                scale: Factor on the outputs, > 0.
            """

            def __init__(self, in_features: int, out_features: int, scale: float = 1.0) -> None:
                super().__init__()
                if scale <= 0:
                    raise ValueError(f"scale must be > 0, got {scale}")
                self.linear, self.scale = nn.Linear(in_features, out_features), scale

            def forward(self, x):
                return self.scale * self.linear(x)
    ''',
}

SPEC = """
    name: lab-linear
    paper: lab_plugin
    task: {type: classification}
    data: {type: synthetic_classification, n_samples: 300, n_features: 6, batch_size: 50}
    model: {type: lab_linear, in_features: 6, out_features: 2, scale: 0.5}
    loss: {type: cross_entropy}
    optimizer: {type: sgd, lr: 0.1}
    metrics: [{type: accuracy}]
    trainer: {max_steps: 8}
"""


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source, site = tmp_path_factory.mktemp("plugin-src"), tmp_path_factory.mktemp("plugin-site")
    for name, text in PLUGIN.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(textwrap.dedent(text).lstrip())
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    return site


def exp(site: Path, tmp_path: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "EXPSPEC_RUNS_DIR": str(tmp_path / "runs"),
           **extra_env}
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_plugin_entries_are_listed_with_their_origin(plugin_site: Path, tmp_path: Path) -> None:
    out = exp(plugin_site, tmp_path, "list", "models")
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "lab_linear" in line)
    assert line.split() == ["lab_linear", "lab_components.models:LabLinear", "from", "plugin",
                            "lab-components", "(lab_components.expspec)"]
    mlp = next(line for line in out.stdout.splitlines() if line.split()[0] == "mlp")
    assert mlp.endswith("from components")


def test_a_spec_naming_a_plugin_component_validates_and_runs(plugin_site: Path, tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    spec.write_text(textwrap.dedent(SPEC).lstrip())
    bad = tmp_path / "bad.yaml"
    bad.write_text(spec.read_text().replace("scale: 0.5", "scael: 0.5"))
    out = exp(plugin_site, tmp_path, "validate", str(bad))
    assert out.returncode == 2
    assert "bad.yaml:5:60: model.scael: lab_linear has no argument 'scael'. Did you mean 'scale'?" in out.stdout + out.stderr
    out = exp(plugin_site, tmp_path, "run", str(spec))
    assert out.returncode == 0, out.stdout + out.stderr
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("lab_plugin").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["model.type"] == "lab_linear" and run.data.params["model.scale"] == "0.5"
    assert 0.0 <= run.data.metrics["test/accuracy"] <= 1.0


def test_a_validation_that_read_a_plugin_signature_is_not_cached(plugin_site: Path, tmp_path: Path) -> None:
    """Its result depends on the plugin's code, which the validate cache does not fingerprint
    (framework/validate_cache.py); a spec of this repository's own components is cached."""
    spec = tmp_path / "lab.yaml"
    spec.write_text(textwrap.dedent(SPEC).lstrip())
    own = tmp_path / "own.yaml"
    own.write_text(spec.read_text().replace("type: lab_linear, in_features: 6, out_features: 2, scale: 0.5",
                                            "type: mlp, in_features: 6, out_features: 2"))
    cache = tmp_path / "cache"
    # own first: from the first live read on, a command stores nothing more (a node checked once is
    # reused by later specs, so a later result may rest on a live signature without reading it)
    out = exp(plugin_site, tmp_path, "validate", str(own), str(spec), EXPSPEC_VALIDATE_CACHE="1",
              EXPSPEC_CACHE_DIR=str(cache))
    assert out.returncode == 0, out.stdout + out.stderr
    stored = [json.loads(p.read_text())["path"] for p in (cache / "validate").glob("*.json")]
    assert stored == [str(own)]


def test_without_the_plugin_the_name_is_unknown(tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    spec.write_text(textwrap.dedent(SPEC).lstrip())
    out = exp(tmp_path / "nothing-installed", tmp_path, "validate", str(spec))
    assert out.returncode == 2
    assert "model.type: unknown model 'lab_linear'." in out.stdout + out.stderr
