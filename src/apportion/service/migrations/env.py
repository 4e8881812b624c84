"""Alembic environment: runs on the connection the service hands over (no URL in an ini file)."""

from __future__ import annotations

from alembic import context

from apportion.service.db import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - the service always passes its connection
    raise RuntimeError("apportion's migrations run from the service (apportion.service.db.migrate)")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
