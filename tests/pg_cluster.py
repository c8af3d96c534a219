"""A throwaway PostgreSQL server for the tests, from Debian's ``postgresql`` package.

``initdb`` and ``pg_ctl`` in a temporary directory, on a free port of 127.0.0.1, with
``fsync`` off (nothing here needs to survive a power cut), in memory when ``/dev/shm`` has
room. PostgreSQL refuses to run as
root, so as root (CI) the cluster belongs to the ``postgres`` user the package creates and
its commands run through ``runuser``. A fresh cluster starts in about a second.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

BIN_DIRS = [Path(f"/usr/lib/postgresql/{v}/bin") for v in (17, 16, 15, 14, 13)]


def find_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, if PostgreSQL is installed."""
    for directory in BIN_DIRS:
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def unavailable_reason() -> str | None:
    """Why no cluster can be started here, or None when one can."""
    if find_bin() is None:
        return ("PostgreSQL is not installed (apt-get install postgresql: initdb and pg_ctl "
                "under /usr/lib/postgresql/*/bin)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'glassrag[postgres]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run PostgreSQL as"
    return None


SHM = Path("/dev/shm")
SHM_FREE_BYTES = 2 << 30  # each test's database is a ~8 MB copy of template1


def _scratch_dir(durable: bool) -> str | None:
    """Where a test cluster's files go: a memory file system when there is one with room
    (deleting the session's databases from a busy disk takes tens of seconds), else the
    default temporary directory. A durable (benchmark) cluster stays on the disk."""
    if durable or not SHM.is_dir():
        return None
    try:
        stats = os.statvfs(SHM)
    except OSError:
        return None
    return str(SHM) if stats.f_bavail * stats.f_frsize >= SHM_FREE_BYTES else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A running PostgreSQL cluster; :meth:`new_database` gives each test its own."""

    def __init__(self, root: Path, durable: bool = False) -> None:
        self.durable = durable
        self.bin = find_bin()
        assert self.bin is not None, unavailable_reason()
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self._user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._user:
            command = ["runuser", "-u", self._user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> Cluster:
        if self._user:
            shutil.chown(self.root, self._user)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync", "--no-instructions")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
                   " -c max_connections=200")
        if not self.durable:  # tests: nothing needs to survive a power cut
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def new_database(self, prefix: str = "kb") -> str:
        """Create an empty database; return its DSN."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)


@contextlib.contextmanager
def running_cluster(durable: bool = False) -> Iterator[Cluster]:
    """Start a cluster in a temporary directory; stop and delete it after. ``durable``
    keeps PostgreSQL's own fsync defaults (for benchmarks)."""
    root = Path(tempfile.mkdtemp(prefix="glassrag-pg-", dir=_scratch_dir(durable)))
    cluster = Cluster(root, durable)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
