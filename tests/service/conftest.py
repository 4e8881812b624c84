"""Service test fixtures: a throwaway PostgreSQL per test session, a fresh database per test (SQLite or
PostgreSQL: every service test runs on both), and real servers on free loopback ports."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from svc_pg import PgServer, create_database, start_pg  # noqa: E402
from svc_server import LiveServer  # noqa: E402


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A PostgreSQL server for the whole session; the test run FAILS (not skips) if it cannot start."""
    try:
        srv = start_pg()
    except (RuntimeError, OSError) as e:
        pytest.fail(f"PostgreSQL could not start, and the service tests need it: {e}", pytrace=False)
    yield srv
    srv.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'apportion.db'}"
    srv: PgServer = request.getfixturevalue("pg_server")
    return create_database(srv, "t_" + uuid.uuid4().hex[:16])


@pytest.fixture
def server_factory(db_url: str, tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start servers on the test's database; every one started is stopped at the end."""
    started: list[LiveServer] = []

    def make(*args: str) -> LiveServer:
        s = LiveServer(db_url, tmp_path, list(args))
        started.append(s)
        return s.start()

    yield make
    for s in started:
        s.stop()
