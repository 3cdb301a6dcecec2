"""What each piece of a run's context and result store costs per run, in warm workers.

The pieces a finished run pays for beyond its training (framework/run_context.py,
framework/store.py, framework/tracking.py), each of which this script can switch off, in its own
processes only, by replacing the function that does it:

  packages      the installed-packages listing behind `environment/packages.txt` (an empty
                listing is still logged)
  git           the commit and dirty flag (two `git` calls a run) and, in a dirty tree, `git diff`
  context_tags  the user and source tags (MLflow's default and environment run contexts)
  dataset       the data module as the run's dataset input
  system        the system metrics monitor ($EXPSPEC_SYSTEM_METRICS_SECONDS=0)
  async         asynchronous metric writes (off: every write synchronous)
  weights       the upload of the final weights (`result/final.ckpt`) only
  result        the whole result upload (result.json, final.ckpt, the `expspec.result` tag)
  lookup        the store lookup by spec hash of `obtain` (`init: {spec}`, `exp reproduce` without
                --fresh); off: the result cache only
  trial_logs    a sweep's upload of its trials' logs (once a sweep)

Measurements, each against a baseline in the same run:

  trials     a sweep of tiny runs (the cvm_fairness tiny spec, `--steps` steps, one batch of
             validation and test), its trials forked from the warm server: the path of every
             sweep trial of `exp reproduce` and `exp sweep`. Per configuration (everything on,
             each piece off, everything off) `--trials` trials, in `--rounds` rounds with the
             configurations interleaved (so load drifts hit all alike); per-trial wall seconds
             (fork to exit) and the ratio to everything on. Each round is a fresh process per
             checkout (its warm server's start is not counted: a warm-up trial runs first).
  profile    cProfile of one forked trial with everything on: where its time goes.
  lookups    ms per store lookup (`store.fetch_result`) of a hash the store lacks and of one it
             holds, against the result cache's lookup (`result_cache.cached`).
  reproduce  `exp reproduce --fresh specs/<paper>/` (`--paper`, default sae_replay), in a fresh
             process with a fresh store, in this tree and `--tree`, alternating, `--reproduce-rounds`
             times (the fastest is reported); with `--reproduce-off` also everything off here.

`--tree PATH` runs everything above with the framework of another checkout as well (e.g.
`git worktree add /tmp/before <commit>`): before and after in one run, alternating.
Numbers are wall-clock: read ratios; absolute seconds depend on the machine and its load.

    python benchmarks/run_overhead.py [--trials 4] [--rounds 2] [--steps 20] [--tree PATH]
        [--paper sae_replay] [--reproduce-rounds 1] [--reproduce-off] [--skip-trials] [--skip-reproduce]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_result import bench_line, cached_bytecode, timed_in_fresh_store  # noqa: E402

PIECES = ("packages", "git", "context_tags", "dataset", "system", "async", "weights", "result", "lookup",
          "trial_logs")
OFF_ENV = "EXPSPEC_BENCH_OFF"  # comma-separated pieces a forked trial switches off
PROFILE_ENV = "EXPSPEC_BENCH_PROFILE"  # where a forked trial writes its cProfile stats
CPU_ENV = "EXPSPEC_BENCH_CPU_DIR"  # where a forked trial writes its CPU seconds


def switch_off(pieces: set[str]) -> None:
    """Replace the functions doing these pieces in this process (framework modules imported)."""
    import dataclasses

    import framework.run_context as run_context
    import framework.runner as runner
    import framework.sweep as sweep
    import framework.tracking as tracking

    if "packages" in pieces:
        run_context.installed_packages = lambda: ""
    if "git" in pieces:
        tracking.git_state = lambda cwd=None: None
        run_context.git_diff = lambda cwd=None: ""
    if "context_tags" in pieces:
        tracking.context_tags = lambda spec_path: {"mlflow.source.name": str(spec_path)}
    if "dataset" in pieces:
        run_context.log_dataset = lambda *args, **kwargs: None
    if "system" in pieces:
        os.environ["EXPSPEC_SYSTEM_METRICS_SECONDS"] = "0"
    if "async" in pieces:
        from framework.mlflow_logger import MAX_BATCH, RunLogger

        def synchronous_flush(self: Any) -> None:
            pending, self._pending = self._pending, []
            for start in range(0, len(pending), MAX_BATCH):
                self.experiment.log_batch(self.run_id, metrics=pending[start : start + MAX_BATCH], synchronous=True)
            self._written = time.monotonic()

        RunLogger.flush = synchronous_flush
    if "result" in pieces:
        runner.upload_result = lambda *args, **kwargs: None
    elif "weights" in pieces:
        upload = runner.upload_result
        runner.upload_result = lambda client, run_id, result: upload(
            client, run_id, dataclasses.replace(result, checkpoint=None))
    if "lookup" in pieces:
        runner.fetch_result = lambda *args, **kwargs: None
    if "trial_logs" in pieces:
        sweep.upload_trial_logs = lambda *args, **kwargs: None


def _original_forked_trial() -> Any:
    from framework import trial_launchers

    return trial_launchers.forked_trial


_FORKED_TRIAL = None


def forked_trial_with_switches(argv: list[str], env: dict[str, str], cwd: str, log_file: str) -> None:
    """framework.trial_launchers.forked_trial, with the pieces $EXPSPEC_BENCH_OFF names switched off and,
    with $EXPSPEC_BENCH_PROFILE, the trial profiled into that file. Runs in the forked child."""
    pieces = set(filter(None, env.get(OFF_ENV, "").split(",")))
    if "system" in pieces:
        env = {**env, "EXPSPEC_SYSTEM_METRICS_SECONDS": "0"}
    switch_off(pieces)
    trial = _FORKED_TRIAL or _original_forked_trial()
    profile_to = env.get(PROFILE_ENV)
    try:
        if not profile_to:
            trial(argv, env, cwd, log_file)
            return
        import cProfile

        profiler = cProfile.Profile()
        try:
            profiler.runcall(trial, argv, env, cwd, log_file)
        finally:
            profiler.dump_stats(profile_to)
    finally:
        used = os.times()  # this trial's CPU seconds, its `git` subprocesses included
        cpu = used.user + used.system + used.children_user + used.children_system
        if env.get(CPU_ENV):
            (Path(env[CPU_ENV]) / f"{os.getpid()}.cpu").write_text(str(cpu))


def install_trial_switches() -> None:
    """Make this process's sweeps fork trials through `forked_trial_with_switches` (pickled by
    reference: the child imports this module from benchmarks/, on the server's sys.path)."""
    global _FORKED_TRIAL
    import run_overhead
    from framework import trial_launchers

    run_overhead._FORKED_TRIAL = trial_launchers.forked_trial
    _FORKED_TRIAL = trial_launchers.forked_trial
    trial_launchers.forked_trial = run_overhead.forked_trial_with_switches


# ---------------------------------------------------------------- trials (in a child process)

PER_RUN = tuple(p for p in PIECES if p not in ("lookup", "trial_logs"))  # what a trial of `exp run` pays


def configurations() -> list[tuple[str, set[str]]]:
    """Everything on, each per-run piece off, everything off (`lookup` and `trial_logs` are not a
    fresh trial's: the lookups are timed apart, the trial logs are in `reproduce`)."""
    return [("everything on", set())] + [(f"{p} off", {p}) for p in PER_RUN] + [("everything off", set(PIECES))]


def trials_child(trials: int, rounds: int, steps: int, profile_to: str | None) -> dict[str, Any]:
    """Run the sweeps in this process (see the module docstring); {config: [trial seconds]}."""
    folder = Path(tempfile.mkdtemp(prefix="expspec-run-overhead-"))
    os.environ.update({"MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}",
                       "EXPSPEC_RUNS_DIR": str(folder / "runs"), "EXPSPEC_CACHE_DIR": str(folder / "cache")})
    os.chdir(folder)  # MLflow's artifacts (./mlruns) land in the temporary folder
    from framework.sweep import run_sweep
    from framework.tracking import client

    install_trial_switches()
    client().search_experiments()  # the store's tables, before any clock starts
    seconds: dict[str, list[float]] = {name: [] for name, _ in configurations()}
    cpu: dict[str, list[float]] = {}
    cpu_dir = folder / "cpu"
    cpu_dir.mkdir()
    os.environ[CPU_ENV] = str(cpu_dir)
    seed = 0
    overrides = [f"trainer.max_steps={steps}", "trainer.limit_val_batches=1", "trainer.limit_test_batches=1"]

    def sweep_once(name: str, pieces: set[str], count: int, profile: str | None = None) -> list[float]:
        nonlocal seed
        seeds = ", ".join(str(seed + i) for i in range(count))  # new hashes: no trial is skipped
        seed += count
        spec = folder / f"sweep{seed}.yaml"
        spec.write_text(f"extends: {ROOT / 'specs/cvm_fairness/tiny.yaml'}\nname: run-overhead\n"
                        f"paper: run_overhead\nsweep:\n  grid: {{seed: [{seeds}]}}\n")
        os.environ[OFF_ENV] = ",".join(sorted(pieces))
        os.environ.pop(PROFILE_ENV, None)
        if profile:
            os.environ[PROFILE_ENV] = profile
        result = run_sweep(spec, overrides, jobs=1, echo=lambda *_: None)
        if result.failed:
            sys.exit(f"{name}: {len(result.failed)} trial(s) failed: {result.failed[0].message}")
        used = [float(path.read_text()) for path in cpu_dir.glob("*.cpu")]
        for path in cpu_dir.glob("*.cpu"):
            path.unlink()
        cpu.setdefault(name, []).extend(used)
        return [o.seconds for o in result.outcomes]

    sweep_once("warm-up", set(), 1)  # the warm server's start is no configuration's cost
    for _ in range(rounds):
        for name, pieces in configurations():
            seconds[name] += sweep_once(name, pieces, trials)
    if profile_to:
        sweep_once("profile", set(), 1, profile_to)
    return {"seconds": seconds, "cpu": {name: cpu[name] for name in seconds}, "lookups": lookups(folder)}


def lookups(folder: Path, repeat: int = 20) -> dict[str, float]:
    """Milliseconds per lookup: the store by a hash it lacks, by one it holds, the result cache."""
    from mlflow.tracking import MlflowClient

    from framework.result_cache import cached
    from framework.store import fetch_result

    client = MlflowClient(os.environ["MLFLOW_TRACKING_URI"])
    experiment = client.get_experiment_by_name("run_overhead")
    run = client.search_runs([experiment.experiment_id], "tags.`expspec.result` = 'stored'", max_results=1)[0]
    held = run.data.tags["expspec.spec_hash"]
    operative = {"tracking": {"uri": None}, "paper": "run_overhead"}

    def per_call(call: Any) -> float:
        call()
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        return (time.perf_counter() - start) / repeat * 1000

    missing = per_call(lambda: fetch_result("0" * 16, operative))
    os.environ["EXPSPEC_CACHE_DIR"] = str(folder / "lookup-cache")  # a hit downloads into here
    found = per_call(lambda: fetch_result(held, operative))
    local = per_call(lambda: cached(held))
    return {"store, hash not there": missing, "store, hash there (download included)": found,
            "result cache": local}


# ---------------------------------------------------------------- runs of child processes

def child_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), str(HERE), os.environ.get("PYTHONPATH")]))}


def run_trials(tree: Path, args: argparse.Namespace, profile_to: str | None) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "trials", "--trials", str(args.trials),
               "--rounds", "1", "--steps", str(args.steps)]
    if profile_to:
        command += ["--profile-to", profile_to]
    done = subprocess.run(command, cwd=tree, env=child_env(tree), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"trials with {tree} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def reproduce(tree: Path, paper: str, pieces: set[str]) -> float:
    """Wall seconds of `exp reproduce --fresh` of the paper's default tier, fresh process and store."""
    env = {**child_env(tree), OFF_ENV: ",".join(sorted(pieces))}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "reproduce", "--paper", str(tree / "specs" / paper)]
    return timed_in_fresh_store(command, None, env, "expspec-run-overhead-reproduce-")


def reproduce_child(paper: str) -> int:
    """`exp reproduce --fresh PAPER --jobs 2` with the pieces of $EXPSPEC_BENCH_OFF switched off,
    here and in every forked trial."""
    pieces = set(filter(None, os.environ.get(OFF_ENV, "").split(",")))
    import framework.runner  # noqa: F401 (switch_off patches it)

    switch_off(pieces)
    install_trial_switches()
    from framework.cli import main

    return main(["reproduce", paper, "--fresh", "--jobs", "2"])


def print_profile(path: str, top: int) -> None:
    import pstats

    print(f"\ncProfile of one forked trial, everything on (cumulative seconds; framework, MLflow client and store calls):")
    stats = pstats.Stats(path, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(r"framework/|mlflow/tracking/client|mlflow/store/tracking/sqlalchemy_store|importlib_metadata|subprocess.py.*\(run\)|threading.py.*\(join\)", top)


def report(label: str, data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Print the per-trial medians, wall and CPU, against everything on; return them."""
    medians = {kind: {name: statistics.median(values) for name, values in data[kind].items()}
               for kind in ("seconds", "cpu")}
    wall, cpu = medians["seconds"], medians["cpu"]
    print(f"\n{label}: per trial (median of {len(data['seconds']['everything on'])}), forked from the warm "
          "server; wall seconds (fork to exit) and the trial's CPU seconds")
    print(f"  {'':16s} {'wall':>8s} {'ratio':>6s} {'saves':>7s}   {'CPU':>7s} {'ratio':>6s} {'saves':>7s}")
    for name in wall:
        print(f"  {name:16s} {wall[name]:7.3f}s {wall[name] / wall['everything on']:5.2f}x "
              f"{wall['everything on'] - wall[name]:+6.3f}s   {cpu[name]:6.3f}s {cpu[name] / cpu['everything on']:5.2f}x "
              f"{cpu['everything on'] - cpu[name]:+6.3f}s")
    print(f"{label}: store lookups")
    for name, value in data["lookups"].items():
        print(f"  {name:40s} {value:7.2f} ms")
    return medians


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=4, help="trials per configuration and round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=20, help="training steps of each tiny run")
    p.add_argument("--tree", type=Path, help="another checkout to measure as well (before/after)")
    p.add_argument("--paper", default="sae_replay")
    p.add_argument("--skip-reproduce", action="store_true")
    p.add_argument("--skip-trials", action="store_true")
    p.add_argument("--reproduce-off", action="store_true", help="also reproduce with everything off")
    p.add_argument("--reproduce-rounds", type=int, default=1, help="the fastest of these is reported")
    p.add_argument("--profile-top", type=int, default=30)
    p.add_argument("--child", choices=["trials", "reproduce"], help=argparse.SUPPRESS)
    p.add_argument("--profile-to", help=argparse.SUPPRESS)
    args = p.parse_args()
    cached_bytecode()
    if args.child == "trials":
        print(json.dumps(trials_child(args.trials, args.rounds, args.steps, args.profile_to)))
        return
    if args.child == "reproduce":
        sys.exit(reproduce_child(args.paper))

    trees = [("this tree", ROOT)] + ([("--tree", args.tree.resolve())] if args.tree else [])
    if not args.skip_trials:
        trials_section(trees, args)
    if not args.skip_reproduce:
        reproduce_section(trees, args)


def trials_section(trees: list[tuple[str, Path]], args: argparse.Namespace) -> None:
    profiles = {label: tempfile.mktemp(prefix="expspec-run-overhead-", suffix=".prof") for label, _ in trees}
    data: dict[str, dict[str, Any]] = {}
    for round_ in range(args.rounds):  # the trees alternate round by round, as the configurations do
        for label, tree in trees:
            last = round_ == args.rounds - 1
            got = run_trials(tree, args, profiles[label] if last else None)
            merged = data.setdefault(label, {"seconds": {}, "cpu": {}, "lookups": {}})
            for kind in ("seconds", "cpu"):
                for name, values in got[kind].items():
                    merged[kind].setdefault(name, []).extend(values)
            merged["lookups"] = got["lookups"]
            print(f"round {round_ + 1} of {args.rounds}, {label}: done", file=sys.stderr, flush=True)
    medians = {label: report(f"{label} ({tree})", data[label]) for label, tree in trees}
    for label, _ in trees:
        print(f"\n{label}:")
        print_profile(profiles[label], args.profile_top)
    for kind, words in (("seconds", "wall"), ("cpu", "CPU")):
        ours = medians["this tree"][kind]
        bench_line(f"per tiny run forked from the warm server ({words}), run context and store all on vs all off",
                   ours["everything on"], ours["everything off"], "s")
        if args.tree:
            bench_line(f"per tiny run forked from the warm server ({words}): this tree vs --tree",
                       ours["everything on"], medians["--tree"][kind]["everything on"], "s")


def reproduce_section(trees: list[tuple[str, Path]], args: argparse.Namespace) -> None:
    """Everything on in each tree (alternating, `--rounds` times), and with `--reproduce-off`
    everything off in this tree."""
    configs = [(label, tree, "everything on", set()) for label, tree in trees]
    if args.reproduce_off:
        configs.append(("this tree", ROOT, "everything off", set(PIECES)))
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.reproduce_rounds):
        for label, tree, name, pieces in configs:
            seconds = reproduce(tree, args.paper, pieces)
            times.setdefault((label, name), []).append(seconds)
            print(f"`exp reproduce --fresh specs/{args.paper}/` {label}, {name}: {seconds:.1f} s", flush=True)
    best = {key: min(values) for key, values in times.items()}
    if args.reproduce_off:
        bench_line(f"`exp reproduce --fresh` of {args.paper}: run context and store all on vs all off",
                   best[("this tree", "everything on")], best[("this tree", "everything off")], "s")
    if args.tree:
        bench_line(f"`exp reproduce --fresh` of {args.paper}: this tree vs --tree",
                   best[("this tree", "everything on")], best[("--tree", "everything on")], "s")

if __name__ == "__main__":
    main()
