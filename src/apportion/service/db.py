"""The service database: SQLAlchemy 2 Core tables, the engine, and Alembic's upgrade at start.

SQLite (the default, `./apportion.db`) runs in WAL mode so readers never wait for the writer;
PostgreSQL is reached with `postgresql+psycopg://...`. The schema is owned by the Alembic revisions
in `migrations/` (shipped in the package); `metadata` below mirrors it for queries.
"""

from __future__ import annotations

from importlib import resources as ires
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from apportion.errors import InputError

metadata = sa.MetaData()

#: applied Kubernetes objects (Node, Queue, PodGroup, Pod, PriorityClass, ConfigMap), JSON bodies
objects = sa.Table(
    "objects", metadata,
    sa.Column("kind", sa.String(64), primary_key=True),
    sa.Column("namespace", sa.String(253), primary_key=True),
    sa.Column("name", sa.String(253), primary_key=True),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("version", sa.BigInteger, nullable=False),
)

#: reservations as the plan holds them (recovery adds them back without a policy check)
reservations = sa.Table(
    "reservations", metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("queue", sa.String(253), nullable=False, index=True),
    sa.Column("user", sa.String(253), nullable=False),
    sa.Column("definition", sa.Text, nullable=True),
    sa.Column("start", sa.BigInteger, nullable=False),
    sa.Column("end", sa.BigInteger, nullable=False),
    sa.Column("period", sa.BigInteger, nullable=False),
    sa.Column("gang", sa.Boolean, nullable=False),
    sa.Column("acceptance_time", sa.BigInteger, nullable=False),
    sa.Column("intervals", sa.Text, nullable=False),
)

#: the id -> queue record of every accepted submit, never removed (reservation spec §5.6)
reservation_ids = sa.Table(
    "reservation_ids", metadata,
    sa.Column("id", sa.String(128), primary_key=True),
    sa.Column("queue", sa.String(253), nullable=False),
)

#: bearer tokens, stored as SHA-256 digests only
tokens = sa.Table(
    "tokens", metadata,
    sa.Column("digest", sa.String(64), primary_key=True),
    sa.Column("user", sa.String(253), nullable=False),
    sa.Column("created", sa.BigInteger, nullable=False),
)

#: small settings kept across restarts
meta = sa.Table(
    "meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


def default_url() -> str:
    """The embedded database a new user gets: `./apportion.db`."""
    return "sqlite:///apportion.db"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    # WAL: readers do not block the writer. NORMAL: a commit survives a crash of the process (the WAL
    # is in the OS's cache); FULL would also survive a power cut at one fsync per commit
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`; SQLite gets WAL and a busy timeout. Bad URLs are InputError."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise InputError(f"not a database URL: {url!r}", where="--db") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise InputError(f"unsupported database {backend!r} (sqlite or postgresql+psycopg)", where="--db")
    try:
        if backend == "sqlite":
            engine = sa.create_engine(url, connect_args={"check_same_thread": False})
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = sa.create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)
    except (sa.exc.ArgumentError, ModuleNotFoundError) as e:
        raise InputError(f"cannot use {url!r}: {e}", where="--db") from None
    return engine


def migrate(engine: Engine) -> None:
    """Bring the schema up to the newest Alembic revision (creates it on an empty database)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(ires.files("apportion.service").joinpath("migrations")))
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
    except sa.exc.OperationalError as e:
        raise InputError(f"cannot open the database: {str(e.orig).strip().splitlines()[0]}", where="--db") from None
