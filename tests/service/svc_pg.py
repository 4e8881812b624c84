"""A throwaway PostgreSQL server for the service tests: initdb + pg_ctl in a temporary folder.

As root, the server runs as the `postgres` user (`runuser -u postgres -- initdb ...`), as PostgreSQL
refuses to run as root. If it cannot start, the tests FAIL (CI must not skip the PostgreSQL half).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def pg_bin(name: str) -> str | None:
    """A PostgreSQL binary: on PATH, else under /usr/lib/postgresql/*/bin (newest first)."""
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        p = Path(d) / name
        if p.exists():
            return str(p)
    return None


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running throwaway server."""

    root: Path
    data: Path
    port: int
    as_postgres: bool
    pg_ctl: str

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of a database on it."""
        return f"postgresql+psycopg://apportion@127.0.0.1:{self.port}/{database}"

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        cmd = (["runuser", "-u", "postgres", "--"] if self.as_postgres else []) + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    def stop(self) -> None:
        """Stop it and remove its folder."""
        self._run([self.pg_ctl, "stop", "-D", str(self.data), "-m", "immediate", "-w"])
        shutil.rmtree(self.root, ignore_errors=True)


def start_pg() -> PgServer:
    """Start a server; RuntimeError with PostgreSQL's own words when it cannot."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("initdb/pg_ctl not found: install the PostgreSQL server (make test installs it)")
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="apportion-pg-"))
    data = root / "data"
    os.chmod(root, 0o777)
    if as_postgres:
        shutil.chown(root, user="postgres")
    srv = PgServer(root, data, free_port(), as_postgres, pg_ctl)
    r = srv._run([initdb, "-D", str(data), "-A", "trust", "-U", "apportion", "--no-sync", "-E", "UTF8"])
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {r.stderr.strip() or r.stdout.strip()}")
    opts = f"-p {srv.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    r = srv._run([pg_ctl, "start", "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "-t", "60"])
    if r.returncode != 0:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {r.stderr.strip()} {log[-500:]}")
    return srv


def create_database(srv: PgServer, name: str) -> str:
    """A fresh empty database; its URL."""
    import psycopg

    with psycopg.connect(f"host=127.0.0.1 port={srv.port} user=apportion dbname=postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return srv.url(name)
