"""How a sweep's trials run: each as `exp run SPEC OVERRIDES... TRIAL-OVERRIDES...` in a process of
its own, forked from a warm server (`ForkedTrials`, the default) or a fresh interpreter
(`TrialProcesses`), with its outcome read back from a result file and a log file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.invocation import child_environ, current
from framework.plan import Trial
from framework.sweep_plan import sets_threads


FINISHED, FAILED, SKIPPED, KILLED = "FINISHED", "FAILED", "SKIPPED", "KILLED"


@dataclass
class TrialOutcome:
    trial: Trial
    status: str
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    message: str = ""


ISOLATIONS = ("fork", "process")

# Imported once by the warm server that forks the trials (`ForkedTrials`), with the modules of
# the sweep's components: what every `exp run` otherwise imports again (~9 s on 2 cores).
PRELOAD = ["framework.warm"]


class TrialLauncher:
    """Runs each trial as `exp run SPEC OVERRIDES... TRIAL-OVERRIDES... hardware.threads=N` in a
    process of its own, a child run of the parent; it reports its result in a JSON file and its
    output goes to a log file, whose last `error: ...` line (else its last line) is the message
    of a failed trial. What a trial is told (the parent run, its name, its result file, the
    stores of the context this launcher was made in) is its run context, its environment at its
    start (`framework.invocation.child_environ`). `hardware.threads=N` (the tool's choice) is left out
    when the user's overrides or the trial's own set hardware.threads: an explicit value wins.
    Subclasses say how the process starts: `TrialProcesses` (a fresh interpreter) or
    `ForkedTrials` (forked from a warm server)."""

    def __init__(self, spec_path: str | Path, overrides: list[str], parent_run_id: str, name: str,
                 threads: int) -> None:
        self.spec_path, self.overrides, self.parent_run_id = spec_path, overrides, parent_run_id
        self.name, self.threads = name, threads
        self.workdir = Path(tempfile.mkdtemp(prefix="expspec-sweep-"))
        self.trial_context = current().for_other_run()
        self.running: dict[int, Any] = {}
        self.stopped = False

    def argv(self, trial: Trial) -> list[str]:
        given = [*self.overrides, *trial.overrides]
        threads = [] if sets_threads(given) else [f"hardware.threads={self.threads}"]
        return ["run", str(self.spec_path), *given, *threads]

    def run(self, i: int, trial: Trial, told: dict[str, Any] | None = None) -> TrialOutcome:
        """Run trial `i` to its end (called from a worker thread); `told`: more fields of its run
        context (`run_tags`, `optuna_trial`: framework/invocation.py)."""
        result_file, log_file = self.workdir / f"{i}.json", self.workdir / f"{i}.log"
        env = child_environ(self.trial_context.but(parent_run_id=self.parent_run_id, result_file=str(result_file),
                                                   run_name=trial.name, **(told or {})))
        start = time.perf_counter()
        try:
            self.running[i] = self.start(self.argv(trial), env, log_file)
        except Exception as error:  # e.g. the warm server is gone: this trial fails, the sweep goes on
            return TrialOutcome(trial, FAILED, None, {}, time.perf_counter() - start, f"could not start: {error!r}")
        if self.stopped:  # stop() came while this trial was starting
            self.terminate(self.running[i])
        code = self.wait(self.running[i])
        seconds = time.perf_counter() - start
        if code == 0 and result_file.is_file():
            data = json.loads(result_file.read_text())
            return TrialOutcome(trial, FINISHED, data["run_id"], data["metrics"], seconds)
        lines = [line for line in log_file.read_text().splitlines() if line.strip()] if log_file.is_file() else []
        # Its `error: ...` line says why (framework.cli prints a hint after it); died of a signal:
        # its last line is whatever it printed before (a progress line), not why.
        errors = [line for line in lines if line.startswith("error: ")]
        message = (errors or lines)[-1] if lines and code >= 0 else _exit_text(code)
        return TrialOutcome(trial, _status(code), None, {}, seconds, message)

    def stop(self) -> None:
        """SIGTERM every trial still running: each marks its run KILLED (see framework.cli)."""
        self.stopped = True
        for handle in list(self.running.values()):
            self.terminate(handle)

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> Any:
        raise NotImplementedError

    def wait(self, handle: Any) -> int:
        raise NotImplementedError

    def terminate(self, handle: Any) -> None:
        raise NotImplementedError


def _status(code: int) -> str:
    """KILLED for a trial stopped by a signal (SIGTERM: --fail-fast or a scheduler, handled as
    Ctrl-C: exit 130; or died of SIGTERM/SIGKILL, e.g. the out-of-memory killer), else FAILED."""
    return KILLED if code in (-signal.SIGTERM, -signal.SIGKILL, 130, 143) else FAILED


def _exit_text(code: int) -> str:
    if code < 0:
        return f"killed by {signal.Signals(-code).name}" + (" (e.g. the out-of-memory killer)" if code == -signal.SIGKILL else "")
    return f"exit code {code}"


class TrialProcesses(TrialLauncher):
    """`exp sweep --isolate process`: each trial a fresh `python -m framework.cli run ...`, which
    imports torch, Lightning and MLflow again (seconds per trial)."""

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> subprocess.Popen:
        with open(log_file, "w") as log:
            return subprocess.Popen([sys.executable, "-m", "framework.cli", *argv], stdout=log,
                                    stderr=subprocess.STDOUT, env=env)

    def wait(self, handle: subprocess.Popen) -> int:
        return handle.wait()

    def terminate(self, handle: subprocess.Popen) -> None:
        if handle.poll() is None:
            handle.send_signal(signal.SIGTERM)


class ForkedTrials(TrialLauncher):
    """`exp sweep` (`--isolate fork`, the default): each trial a child forked from a warm server,
    multiprocessing's forkserver, which imported PRELOAD and the sweep's component modules once.

    - The server is a fresh interpreter started from this process (never forked from it), so no
      MLflow connection, thread or torch thread pool of this process reaches a trial; the server
      imports modules and runs nothing, so torch's thread pools start in each trial, after its
      `torch.set_num_threads`.
    - A trial is a process of its own: a crash, `os._exit` or SIGKILL ends that trial only
      (FAILED or KILLED, and the sweep goes on); SIGTERM ends it as Ctrl-C does (its run KILLED).
    - A trial gets the environment this process has when the trial starts, with its run context
      written in (`child_environ`), and this process's working directory (the server's are those
      of its own start); its output goes to its log file, and it runs
      `framework.cli.main` with the same arguments as `TrialProcesses`: same checks, same code,
      same numbers (a test compares the metrics of both). It exits without the interpreter's
      tear-down (multiprocessing ends forked children with os._exit, after flushing output).
    - The server lives as long as this process and serves every sweep it runs (`exp reproduce`);
      modules are preloaded when it starts, so a later sweep's own components are imported by
      each of its trials.
    """

    def __init__(self, spec_path: str | Path, overrides: list[str], parent_run_id: str, name: str,
                 threads: int, preload: list[str]) -> None:
        super().__init__(spec_path, overrides, parent_run_id, name, threads)
        self.context = warm_context(preload)

    def start(self, argv: list[str], env: dict[str, str], log_file: Path) -> Any:
        process = self.context.Process(target=forked_trial, args=(argv, env, os.getcwd(), str(log_file)),
                                       name=f"expspec-trial-{log_file.stem}")
        process.start()
        return process

    def wait(self, handle: Any) -> int:
        handle.join()
        return handle.exitcode

    def terminate(self, handle: Any) -> None:
        if handle.exitcode is None:
            handle.terminate()


def warm_context(modules: list[str]) -> Any:
    """multiprocessing's forkserver context, its server started (in the background: its imports
    overlap what this process does next) with PRELOAD and `modules` when it is not running yet."""
    import multiprocessing
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *modules])
    forkserver.ensure_running()
    return context


def component_modules(operative: dict[str, Any]) -> list[str]:
    """The modules of the registered components the spec names, nested nodes and terms included
    (to preload them): every mapping whose `type` is a registered name, in any kind."""
    import registry

    names: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("type"), str):
                names.append(value["type"])
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(operative)
    modules = [reg.target(name).partition(":")[0] for name in dict.fromkeys(names)
               for reg in registry.KINDS.values() if name in reg]
    return list(dict.fromkeys(modules))


def forked_trial(argv: list[str], env: dict[str, str], cwd: str, log_file: str) -> None:
    """A forked trial: this trial's working directory, environment and log file, then `exp run`."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    from framework.cli import main

    sys.exit(main(argv))
