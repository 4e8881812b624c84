"""The schema twice: `service/db.py`'s SQLAlchemy metadata (what the queries use) and the Alembic
revisions (what creates and upgrades a database). A database migrated to head must be exactly what the
metadata describes (tables, columns, types, nullability, indexes, keys), on SQLite and PostgreSQL, so a
column added to one and not the other fails here rather than at a user's first query."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from apportion.service.db import make_engine, metadata, migrate


def _drift(url: str, target: sa.MetaData) -> list[Any]:
    engine = make_engine(url)
    try:
        migrate(engine)
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return list(compare_metadata(ctx, target))
    finally:
        engine.dispose()


def test_migrations_at_head_match_the_metadata(db_url: str) -> None:
    assert _drift(db_url, metadata) == []


def test_a_column_only_in_the_metadata_is_caught(db_url: str) -> None:
    drifted = sa.MetaData()
    for table in metadata.tables.values():
        table.to_metadata(drifted)
    drifted.tables["tokens"].append_column(sa.Column("added_later", sa.Integer, nullable=True))
    diff = _drift(db_url, drifted)
    assert [(d[0], d[2], d[3].name) for d in diff] == [("add_column", "tokens", "added_later")], diff
