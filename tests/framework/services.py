"""Real services on localhost for the team-store tests: a PostgreSQL server (Debian's package) and
an `mlflow server` on it with proxied artifacts, as a team runs them (README, "Team / cluster").

Each is started in a temporary folder on a free port and stopped by its process id (a whole
process group for `mlflow server`, which starts its own workers), never by name. Where a tool
is missing the tests that need it skip, saying which; with EXPSPEC_CI=1 (`.ci/run`, which
installs them) they fail instead, so CI cannot pass without them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

POSTGRES_USER = "postgres"
POOL_SIZE = 48  # the mlflow server's database connections (PostgreSQL allows 100)  # initdb refuses to run as root: the cluster belongs to this user


def require(missing: str | None) -> None:
    """Skip with `missing` (what is absent), or fail when EXPSPEC_CI=1."""
    if missing and os.environ.get("EXPSPEC_CI") == "1":
        pytest.fail(f"EXPSPEC_CI=1 (.ci/run) but {missing}")
    if missing:
        pytest.skip(missing)


def postgres_bin() -> Path | None:
    """The folder of `initdb` and `postgres`: on PATH, else Debian's /usr/lib/postgresql/<ver>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def missing_postgres() -> str | None:
    """Why a PostgreSQL server cannot be started here, or None."""
    if postgres_bin() is None:
        return "PostgreSQL is not installed (no initdb; Debian: apt-get install postgresql)"
    try:
        pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        return f"no '{POSTGRES_USER}' user to own the PostgreSQL cluster"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed (pip install -e '.[distributed]')"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres() -> dict[str, object]:
    """Popen arguments that run a command as the postgres user (when this process is root): the
    started process is the server itself, so its pid is the one to signal."""
    if os.geteuid() != 0:
        return {}
    owner = pwd.getpwnam(POSTGRES_USER)
    return {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": [], "cwd": "/"}


def _wait(ready: Callable[[], bool], process: subprocess.Popen, what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}: {log.read_text()[-2000:]}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not become ready in {seconds:.0f} s: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen, group: bool = False, sig: int = signal.SIGTERM) -> None:
    """Stop a process this module started, by its pid (and its process group when it leads one)."""
    if process.poll() is None:
        (os.killpg if group else os.kill)(process.pid, sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            (os.killpg if group else os.kill)(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A fresh PostgreSQL cluster in a temporary folder, on a free port of 127.0.0.1 (trust
    authentication, local only), with a database `mlflow`; yields its SQLAlchemy URI."""
    binaries = postgres_bin()
    owner = pwd.getpwnam(POSTGRES_USER)
    root = Path(tempfile.mkdtemp(prefix="expspec-pg-"))
    data, sockets, log = root / "data", root / "sockets", root / "postgres.log"
    for folder in (root, sockets):
        folder.mkdir(exist_ok=True)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    subprocess.run([str(binaries / "initdb"), "-D", str(data), "-U", POSTGRES_USER, "--auth=trust", "-E", "UTF8",
                    "--no-sync"], check=True, capture_output=True, timeout=120, **_as_postgres())
    port = free_port()
    with open(log, "w") as out:
        os.chown(log, owner.pw_uid, owner.pw_gid)
        server = subprocess.Popen([str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets),
                                   "-h", "127.0.0.1", "-c", "fsync=off"], stdout=out, stderr=subprocess.STDOUT,
                                  **_as_postgres())
    try:
        import psycopg2

        def ready() -> bool:
            try:
                psycopg2.connect(host="127.0.0.1", port=port, user=POSTGRES_USER, dbname="postgres").close()
                return True
            except psycopg2.OperationalError:
                return False

        _wait(ready, server, "postgres", log)
        connection = psycopg2.connect(host="127.0.0.1", port=port, user=POSTGRES_USER, dbname="postgres")
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE mlflow")
        connection.close()
        yield f"postgresql+psycopg2://{POSTGRES_USER}@127.0.0.1:{port}/mlflow"
    finally:
        # SIGINT to the postmaster: PostgreSQL's "fast" shutdown (sessions ended, no waiting)
        _stop(server, sig=signal.SIGINT)
        shutil.rmtree(root, ignore_errors=True)


class MlflowServer:
    """`mlflow server` on `backend_uri` with proxied artifacts (clients upload and download
    through it, `--serve-artifacts`) in the folder `root`, on `port`; `restart` stops it by its
    process group and starts it again on the same port and store, as an admin restarting the
    team's server would."""

    def __init__(self, backend_uri: str, root: Path) -> None:
        self.backend_uri, self.root, self.port = backend_uri, root, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri,
                "--serve-artifacts", "--artifacts-destination", str(self.root / "artifacts"),
                "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        log = self.root / "server.log"
        with open(log, "a") as out:
            # MLflow's job runner (seven huey consumers for GenAI jobs expspec never submits) would
            # double the server's start-up time: off.
            # Its database connections: SQLAlchemy's default pool (5 + 10 overflow) made requests
            # wait for a connection and fail after 30 s ("QueuePool limit ... reached", a 400 the
            # client does not retry) with 32 trials writing at once (benchmarks/store_load.py).
            # A team's server gets one connection per concurrent writer (docs/team.md).
            env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
                   "MLFLOW_SQLALCHEMYSTORE_POOL_SIZE": str(POOL_SIZE), "MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW": "0"}
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                            env=env)

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False

        _wait(ready, self.process, "mlflow server", log, seconds=120)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process, group=True)

    def restart(self, down_seconds: float) -> None:
        """Stop the server, leave it down for `down_seconds`, start it again."""
        self.stop()
        time.sleep(down_seconds)
        self.start()


@contextlib.contextmanager
def mlflow_server_process(backend_uri: str) -> Iterator[MlflowServer]:
    """A started `MlflowServer` in a temporary folder, stopped (by its process group) at the end."""
    root = Path(tempfile.mkdtemp(prefix="expspec-mlflow-server-"))
    server = MlflowServer(backend_uri, root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def mlflow_server(backend_uri: str) -> Iterator[str]:
    """`mlflow server` on `backend_uri` (see `MlflowServer`) on a free port; yields its URL."""
    with mlflow_server_process(backend_uri) as server:
        yield server.url


def create_database(uri: str, name: str) -> str:
    """Create the database `name` on the PostgreSQL server of `uri` (a `postgres()` URI);
    returns its URI (e.g. an Optuna queue beside the MLflow database: both keep an
    `alembic_version` table, so they cannot share one)."""
    import psycopg2

    host_port = uri.split("@", 1)[1].split("/", 1)[0]
    host, port = host_port.split(":")
    connection = psycopg2.connect(host=host, port=int(port), user=POSTGRES_USER, dbname="postgres")
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    connection.close()
    return uri.rsplit("/", 1)[0] + "/" + name
