"""The team store under load (issue 35 item 7), the CI-sized version of benchmarks/store_load.py:
8 trial processes at once (2 queue workers x 4 jobs, a PostgreSQL queue) against one `mlflow
server` on a real PostgreSQL, every step's metrics written at once, and the server restarted
(down 10 s) while every trial is running. MLflow's client retries a refused connection with
backoff (MLFLOW_HTTP_REQUEST_MAX_RETRIES, default 7, backoff factor 2: a restart of up to about two
minutes), so the trials go on; afterwards the store must hold every metric value a reference run
of the same trials logged, no more and no other, no run RUNNING, each trial once, and every
worker must have exited 0. The 32-process figures are in benchmarks/README.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from services import create_database, missing_postgres, mlflow_server_process, postgres, require
from store_load import audit, run_load, sweep_spec, wait_until_running, worker_logs

pytestmark = pytest.mark.xdist_group("store_load")

WORKERS, JOBS, STEPS = 2, 4, 120


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    require(missing_postgres())
    with postgres() as uri:
        yield uri


def test_eight_trials_at_once_lose_nothing_across_a_server_restart(database: str, tmp_path: Path) -> None:
    trials = WORKERS * JOBS
    fast = {"EXPSPEC_METRICS_FLUSH_SECONDS": "0"}
    reference_uri = f"sqlite:///{tmp_path / 'reference.db'}"
    spec = sweep_spec(tmp_path / "reference", trials, STEPS, "store_load_reference")
    codes, _ = run_load(spec, f"journal:{tmp_path / 'reference.log'}", reference_uri, tmp_path / "reference",
                        1, 2, timeout=900, env=fast)
    assert codes == [0], worker_logs(tmp_path / "reference")

    with mlflow_server_process(database) as server:
        queue = create_database(database, "load_queue")
        spec = sweep_spec(tmp_path / "server", trials, STEPS, "store_load")
        running_at_restart = []

        def restart_once_all_run() -> None:
            running_at_restart.append(wait_until_running(server.url, "store_load", trials))
            server.restart(10)

        codes, _ = run_load(spec, queue, server.url, tmp_path / "server", WORKERS, JOBS, timeout=900,
                            during=restart_once_all_run, env=fast)
        logs = worker_logs(tmp_path / "server")
        assert running_at_restart[0] >= trials // 2, f"only {running_at_restart} trials were running at the restart"
        assert codes == [0] * WORKERS, logs
        result = audit(server.url, "store_load", reference_uri, "store_load_reference", trials)
        assert result.points > trials * STEPS, result.summary()  # several metrics at every step
        assert result.ok, result.summary() + "\n" + logs
