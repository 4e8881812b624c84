"""The first schema: cluster objects, reservations, the reservation id record, tokens, metadata.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create every table of the first schema."""
    op.create_table(
        "objects",
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("namespace", sa.String(253), primary_key=True),
        sa.Column("name", sa.String(253), primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "reservations",
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
    op.create_table(
        "reservation_ids",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("queue", sa.String(253), nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("user", sa.String(253), nullable=False),
        sa.Column("created", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    """Drop every table of the first schema."""
    for name in ("meta", "tokens", "reservation_ids", "reservations", "objects"):
        op.drop_table(name)
