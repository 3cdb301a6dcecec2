"""The team store under load (issue 35 item 7): `workers x jobs` trial processes at once against
one `mlflow server` on a real PostgreSQL on localhost, vs the same workload on a local sqlite store.

Both configurations run the same sweep (tiny cvm_fairness spec, one trial per seed, `--steps`
optimizer steps, every step logged) through a queue (PostgreSQL for the server, a journal file
for sqlite) by `--workers` queue workers of `--jobs` trials each, into a fresh store. Metrics are
written at every step (EXPSPEC_METRICS_FLUSH_SECONDS=0), the heaviest write pattern a spec can
ask for; `--flush S` times the default buffered writes instead. A reference run (the same
trials, 2 at a time, into another sqlite store) gives every trial's expected metric history, and
each configuration is audited against it (tests/framework/store_load.py: nothing lost, nothing
extra, no value changed, no run left RUNNING, no trial run twice, every worker exit 0).

Printed per configuration: wall time, metric batches written per second (the server's
`log-batch` requests from its access log; for sqlite, the same count as the server's), seconds
per trial step (the mean of each trial run's duration / steps), the CPU the server and
PostgreSQL used, and the audit. `--restart S` stops the server once every trial is running and
starts it S seconds later, to show what a restart does to running trials.

    python benchmarks/store_load.py [--workers 8] [--jobs 4] [--steps 300] [--restart 10]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests/framework")]

import psutil  # noqa: E402  (the `distributed` extra)
from services import create_database, mlflow_server_process, postgres  # noqa: E402
from store_load import audit, histories, run_load, sweep_spec, wait_until_running, worker_logs  # noqa: E402


def step_seconds(tracking_uri: str, paper: str, steps: int) -> float:
    """Mean over the sweep's trial runs of (run end - run start) / steps."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(paper)
    runs = [r for r in client.search_runs([experiment.experiment_id], max_results=1000)
            if "mlflow.parentRunId" in r.data.tags and r.info.end_time]
    return sum((r.info.end_time - r.info.start_time) / 1000 / steps for r in runs) / max(1, len(runs))


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its live children and its reaped children."""
    process = psutil.Process(pid)
    total = sum(process.cpu_times()[:4])
    for child in process.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def sqlite(args: argparse.Namespace, folder: Path, env: dict[str, str], reference_uri: str) -> None:
    """The workload on a local sqlite store (a journal-file queue), audited."""
    trials = args.workers * args.jobs
    sqlite_uri = f"sqlite:///{folder / 'load.db'}"
    spec = sweep_spec(folder / "sqlite", trials, args.steps, "store_load")
    codes, wall = run_load(spec, f"journal:{folder / 'load.log'}", sqlite_uri, folder / "sqlite",
                           args.workers, args.jobs, timeout=3600, env=env)
    result = audit(sqlite_uri, "store_load", reference_uri, "store_load", trials)
    print(f"sqlite store: exit codes {sorted(set(codes))}, wall {wall:.1f} s, "
          f"{step_seconds(sqlite_uri, 'store_load', args.steps) * 1000:.1f} ms per trial step; "
          f"audit {'OK' if result.ok else 'FAILED'}: {result.summary()}")
    if not result.ok or any(codes):
        print(worker_logs(folder / "sqlite"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--flush", type=float, default=0.0, help="EXPSPEC_METRICS_FLUSH_SECONDS (default 0)")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the sqlite configuration")
    parser.add_argument("--restart", type=float, default=None, help="restart the server, down this many seconds")
    args = parser.parse_args()
    trials = args.workers * args.jobs
    folder = Path(tempfile.mkdtemp(prefix="expspec-store-load-"))
    env = {"EXPSPEC_METRICS_FLUSH_SECONDS": str(args.flush)}
    print(f"{args.workers} workers x {args.jobs} jobs = {trials} trial processes at once, {args.steps} steps each, "
          f"metrics written every {args.flush:g} s; folder {folder}")

    reference_uri = f"sqlite:///{folder / 'reference.db'}"
    spec = sweep_spec(folder / "reference", trials, args.steps, "store_load")
    codes, wall = run_load(spec, f"journal:{folder / 'reference.log'}", reference_uri, folder / "reference",
                           1, 2, timeout=3600, env=env)
    print(f"reference (1 worker x 2 jobs, sqlite): exit codes {codes}, {wall:.1f} s")
    points = sum(len(h[0]) for h in histories(reference_uri, "store_load")[0].values())

    if not args.no_sqlite:
        sqlite(args, folder, env, reference_uri)

    with postgres() as database, mlflow_server_process(database) as server:
        queue = create_database(database, "queue")
        spec = sweep_spec(folder / "server", trials, args.steps, "store_load")
        postmaster = next(p for p in psutil.process_iter(["cmdline"])
                          if p.info["cmdline"] and p.info["cmdline"][0].endswith("/postgres")
                          and database.split(":")[-1].split("/")[0] in p.info["cmdline"])
        server_cpu, pg_cpu = cpu_seconds(server.process.pid), cpu_seconds(postmaster.pid)

        def restart() -> None:
            if args.restart is None:
                return
            running = wait_until_running(server.url, "store_load", trials)
            nonlocal server_cpu
            server_cpu -= cpu_seconds(server.process.pid)
            print(f"restarting the server ({running} trials running): down for {args.restart:g} s")
            server.restart(args.restart)
            server_cpu += cpu_seconds(server.process.pid)

        codes, wall = run_load(spec, queue, server.url, folder / "server", args.workers, args.jobs,
                               timeout=3600, during=restart, env=env)
        server_cpu = cpu_seconds(server.process.pid) - server_cpu
        pg_cpu = cpu_seconds(postmaster.pid) - pg_cpu
        log = (server.root / "server.log").read_text()
        batches = len(re.findall(r"POST /api/2\.0/mlflow/runs/log-batch", log))
        result = audit(server.url, "store_load", reference_uri, "store_load", trials)
        print(f"mlflow server on PostgreSQL: exit codes {sorted(set(codes))}, wall {wall:.1f} s, "
              f"{batches} log-batch requests = {batches / wall:.1f} per s, "
              f"{step_seconds(server.url, 'store_load', args.steps) * 1000:.1f} ms per trial step; "
              f"CPU: server {server_cpu:.1f} s, PostgreSQL {pg_cpu:.1f} s; "
              f"audit {'OK' if result.ok else 'FAILED'}: {result.summary()}")
        print(f"metric values per trial: {points / trials:.0f}")
        if not result.ok or any(codes):
            print(worker_logs(folder / "server"))
            print(log[-3000:])


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
