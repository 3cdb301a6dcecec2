"""framework.invocation.pin_cpu_numerics: the `exp` command, each sweep trial and the tests pin
torch's CPU kernels to AVX2, so a tiny CPU experiment prints the same numbers on AVX2 and AVX-512
machines (the README claim tables); importing framework sets nothing."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from framework.invocation import CPU_NUMERICS, RunContext, child_environ

ROOT = Path(__file__).resolve().parents[2]
FLAGS = set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").is_file() else set()
X86_AVX2 = platform.machine() in ("x86_64", "AMD64") and "avx2" in FLAGS

# The numbers a run computes, as bits: softmax (ATen's vectorized kernel) and conv1d (oneDNN), the
# two kinds of kernel that differed between an AVX2 and an AVX-512 machine's claim checks.
PROBE = """
import hashlib, json, os, sys
if sys.argv[1] == "pinned":
    from framework.invocation import pin_cpu_numerics
    pin_cpu_numerics()
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
x = torch.randn(257, 513)
bits = [x.softmax(1), torch.nn.functional.conv1d(x[None], torch.randn(7, 257, 5)), x @ x.T]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                  "env": {k: os.environ.get(k) for k in sys.argv[2:]},
                  "bits": [hashlib.sha256(t.numpy().tobytes()).hexdigest() for t in bits]}))
"""


@functools.cache  # each probe is a fresh interpreter importing torch (~1 s): run each kind once
def _probe(importing: str, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in CPU_NUMERICS and k != "EXPSPEC_CPU_NUMERICS"}
    done = subprocess.run([sys.executable, "-c", PROBE, importing, *CPU_NUMERICS], env={**clean, **env}, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_pinning_reaches_torchs_kernels() -> None:
    pinned = _probe("pinned")
    assert pinned["env"] == CPU_NUMERICS
    if X86_AVX2:
        assert pinned["capability"] == "AVX2"


def test_the_test_process_computes_with_the_pinned_kernels() -> None:
    # tests/conftest.py pins them first; the claim checks run in this process.
    import torch

    assert {name: os.environ.get(name) for name in CPU_NUMERICS} == CPU_NUMERICS
    if X86_AVX2:
        assert torch.backends.cpu.get_cpu_capability() == "AVX2"


def test_the_users_own_setting_and_native_are_kept() -> None:
    assert _probe("pinned", ATEN_CPU_CAPABILITY="default")["capability"] == "DEFAULT"
    native = _probe("pinned", EXPSPEC_CPU_NUMERICS="native")
    assert native["env"] == {name: None for name in CPU_NUMERICS}
    assert native == _probe("torch only")  # exactly what torch does on its own


@pytest.mark.skipif("avx512f" not in FLAGS, reason="needs an AVX-512 machine, where native kernels differ from AVX2")
def test_on_an_avx512_machine_the_pins_change_the_numbers() -> None:
    pinned, native = _probe("pinned"), _probe("pinned", EXPSPEC_CPU_NUMERICS="native")
    assert native["capability"] == "AVX512"
    assert pinned["bits"] != native["bits"]  # what the pins are for: the AVX-512 kernels add in another order


IMPORTS = """
import json, os
before = dict(os.environ)
import framework, framework.cli, framework.runner, framework.tracking, framework.sweep, framework.resume
import framework.claims.record, framework.slurm, framework.trial_launchers
print(json.dumps({"changed": sorted(k for k in {**before, **os.environ} if before.get(k) != os.environ.get(k))}))
"""


def test_importing_framework_leaves_the_environment_alone() -> None:
    clean = {k: v for k, v in os.environ.items() if k not in CPU_NUMERICS}
    done = subprocess.run([sys.executable, "-c", IMPORTS], env=clean, cwd=ROOT, capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout) == {"changed": []}


def test_the_exp_command_pins_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import framework.cli as cli

    seen = {}
    for name in CPU_NUMERICS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPSPEC_QUICK_EXIT", "0")
    monkeypatch.setattr(sys, "argv", ["exp", "list"])
    monkeypatch.setattr(cli, "_main", lambda args: seen.update({k: os.environ.get(k) for k in CPU_NUMERICS}) or 0)
    with pytest.raises(SystemExit):
        cli.entry()
    assert seen == CPU_NUMERICS


def test_a_trials_environment_is_pinned() -> None:
    assert {k: child_environ(RunContext(), base={})[k] for k in CPU_NUMERICS} == CPU_NUMERICS
    native = child_environ(RunContext(), base={"EXPSPEC_CPU_NUMERICS": "native"})
    assert not set(CPU_NUMERICS) & set(native)
