"""What a researcher expects to see about a run in the MLflow UI beyond its params and metrics:
who started it and from where, the machine's load, the data it read, the code and packages.

- `context_tags`: the user and source tags `mlflow.start_run` resolves (`mlflow.user`,
  `mlflow.source.type`, and the tags of $MLFLOW_RUN_CONTEXT), with `mlflow.source.name` set to
  the spec path: the spec, not the `exp` script, is what a run came from. Not MLflow's git
  context: the tracker sets the commit itself, and MLflow's git lookup cost ~0.2 s a run.
- `log_context`: the artifacts `environment/packages.txt` (every installed distribution,
  `name==version`, sorted) and, when the git tree has uncommitted changes to tracked files,
  `git/diff.patch` (`git diff HEAD`: with the commit tag, the exact code that ran). The packages
  are listed once per process (`installed_versions`): they do not change while a command runs,
  and listing them cost 0.2-0.5 s a run (the email parser over ~400 METADATA files); the warm
  server of sweep trials lists them before it forks (framework/warm.py), so a forked trial
  inherits the listing instead of paying for it.
- `log_dataset`: the data module as an MLflow dataset input (context `train`), named by its
  registered type, with a digest of the operative `data:` section and the seed: two runs with
  the same digest read the same data, built by the same code (the commit tag says which).
- `SystemMetrics`: MLflow's system metrics monitor (`system/cpu_utilization_percentage`,
  `system/system_memory_usage_megabytes`, disk, network, and GPU utilization and memory where
  an NVIDIA GPU and pynvml are present), sampled every $EXPSPEC_SYSTEM_METRICS_SECONDS seconds
  (default 10; 0 turns it off) while the run trains, in a background thread. It needs psutil
  (the `distributed` extra); without it the run's tag `expspec.system_metrics` says so.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
from typing import TYPE_CHECKING, Any

import yaml
from framework.extras import missing

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

SYSTEM_METRICS_SECONDS = 10.0


def context_tags(spec_path: str) -> dict[str, str]:
    """The user and source tags `mlflow.start_run` would set, source name = the spec path."""
    from mlflow.tracking.context.default_context import DefaultRunContext
    from mlflow.tracking.context.system_environment_context import SystemEnvironmentContext

    environment = SystemEnvironmentContext()
    tags = environment.tags() if environment.in_context() else {}
    return {**DefaultRunContext().tags(), **tags, "mlflow.source.name": str(spec_path)}


def installed_packages() -> str:
    """Every installed distribution as `name==version`, one a line, sorted by name."""
    found = installed_versions()
    return "".join(f"{name}=={found[name]}\n" for name in sorted(found, key=str.lower))


@functools.cache
def installed_versions() -> dict[str, str]:
    """Every installed distribution's name and version, listed once per process (see the module
    docstring). A name installed twice on sys.path is listed with the version found first, the
    one `import` and `importlib.metadata.version` find. Read from the metadata file's header
    lines only: parsing whole files (long descriptions) with the email parser cost ~1 ms each."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name, version = _name_and_version(dist)
        found.setdefault(name, version)
    return found


def package_version(name: str) -> str:
    """The installed version of distribution `name` (any spelling: `Foo_bar` = `foo-bar`), from
    `installed_versions`; "not installed" when there is none."""
    wanted = _normalized(name)
    return next((v for k, v in installed_versions().items() if _normalized(k) == wanted), "not installed")


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _name_and_version(dist: importlib.metadata.Distribution) -> tuple[str, str]:
    """(Name, Version) from the header of a distribution's METADATA (or PKG-INFO): the lines
    before the first empty line, as the core metadata format defines them."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        if key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    return fields.get("Name") or "?", fields.get("Version") or dist.version or "?"


def git_diff(cwd: str | None = None) -> str:
    """`git diff HEAD` of the tree holding `cwd` (changes to tracked files); empty when clean or
    outside a git checkout."""
    try:
        done = subprocess.run(["git", "diff", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def log_context(client: MlflowClient, run_id: str, dirty: bool) -> None:
    """The packages artifact, and the git diff artifact when the tree is `dirty`."""
    client.log_text(run_id, installed_packages(), "environment/packages.txt")
    diff = git_diff() if dirty else ""
    if diff:
        client.log_text(run_id, diff, "git/diff.patch")


def data_digest(operative: dict[str, Any]) -> str:
    """A digest of the operative `data:` section and the seed (16 hex digits)."""
    text = yaml.safe_dump({"data": operative.get("data"), "seed": operative.get("seed")}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def log_dataset(client: MlflowClient, run_id: str, operative: dict[str, Any], spec_path: str) -> None:
    """Log the spec's data module as the run's dataset input (see the module docstring)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    data = operative.get("data") or {}
    name = data.get("type", "data") if isinstance(data, dict) else "data"
    source = {"tags": {"expspec.spec_path": str(spec_path), "expspec.data": yaml.safe_dump(data, sort_keys=True)}}
    dataset = Dataset(name=str(name), digest=data_digest(operative), source_type="code", source=json.dumps(source))
    client.log_inputs(run_id, [DatasetInput(dataset, [InputTag("mlflow.data.context", "train")])])


class SystemMetrics:
    """MLflow's system metrics monitor on a run, while it trains (see the module docstring)."""

    def __init__(self, client: MlflowClient, run_id: str, uri: str, resumed: bool = False) -> None:
        self.monitor = None
        seconds = float(os.environ.get("EXPSPEC_SYSTEM_METRICS_SECONDS", SYSTEM_METRICS_SECONDS))
        if seconds <= 0:
            client.set_tag(run_id, "expspec.system_metrics", "off ($EXPSPEC_SYSTEM_METRICS_SECONDS=0)")
            return
        if importlib.util.find_spec("psutil") is None:
            client.set_tag(run_id, "expspec.system_metrics",
                           "off: " + missing("psutil", "MLflow's system metrics"))
            return
        import logging

        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        logging.getLogger("mlflow.system_metrics").setLevel(logging.WARNING)  # its start/stop INFO lines
        self.monitor = SystemMetricsMonitor(run_id, sampling_interval=seconds, resume_logging=resumed,
                                            tracking_uri=uri)
        self.monitor.start()

    def stop(self) -> None:
        """Stop sampling and write what was sampled (joins the monitor's thread)."""
        if self.monitor is not None:
            self.monitor.finish()
            self.monitor = None
