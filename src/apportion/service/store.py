"""SqlStore: what the service keeps in its database, and how it reads it back at start.

Reservations are stored as the plan holds them (user, definition, start, end, period, gang flag,
acceptance time, allocation intervals), so recovery puts the very same allocation back into the plan
without asking the agent or the policy again (YARN's RM recovery). Each method that writes takes the
open transaction's connection: the writer groups everything one request changes into one commit.

This is the SQL side of a PlanStore: `save_reservation`, `remove_reservation`, `record_id` and
`load_plans` are the four operations a plan's store needs (add/update, delete, the id -> queue
record, recovery).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from apportion.reservation.definition import ReservationDefinition, ReservationId, parse_definition
from apportion.reservation.plan import ReservationAllocation
from apportion.service import db

ObjectKey = tuple[str, str, str]


def definition_json(d: ReservationDefinition) -> dict[str, Any]:
    """The definition as REST JSON, with its real priority (the list reply always says 0)."""
    out = d.to_json()
    out["priority"] = d.priority
    return out


def digest(token: str) -> str:
    """SHA-256 of a bearer token: tokens are long random strings, so a fast hash is enough."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class StoredReservation:
    """One row of `reservations`, the allocation rebuilt."""

    queue: str
    allocation: ReservationAllocation


class SqlStore:
    """Reads and writes of the service database (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- reservations (the PlanStore operations) ------------------------------------------------
    def save_reservation(self, conn: Connection, queue: str, r: ReservationAllocation) -> None:
        """Insert or replace one reservation as the plan now holds it."""
        row = {
            "id": str(r.id),
            "queue": queue,
            "user": r.user or "",
            "definition": json.dumps(definition_json(r.definition)) if r.definition is not None else None,
            "start": r.start,
            "end": r.end,
            "period": r.period,
            "gang": r.gang,
            "acceptance_time": r.acceptance_time,
            "intervals": json.dumps([[a, b, [v[0], v[1]]] for a, b, v in r.intervals]),
        }
        conn.execute(sa.delete(db.reservations).where(db.reservations.c.id == row["id"]))
        conn.execute(sa.insert(db.reservations).values(**row))

    def remove_reservation(self, conn: Connection, rid: ReservationId) -> None:
        """Delete one reservation (deleted, archived or replanned away)."""
        conn.execute(sa.delete(db.reservations).where(db.reservations.c.id == str(rid)))

    def record_id(self, conn: Connection, rid: ReservationId, queue: str) -> None:
        """Remember the queue of an accepted submit (never removed)."""
        exists = conn.execute(sa.select(db.reservation_ids.c.id).where(db.reservation_ids.c.id == str(rid))).first()
        if exists is None:
            conn.execute(sa.insert(db.reservation_ids).values(id=str(rid), queue=queue))

    def load_plans(self) -> tuple[list[StoredReservation], dict[ReservationId, str]]:
        """Every stored reservation, and the id -> queue record."""
        out: list[StoredReservation] = []
        with self.engine.connect() as conn:
            for row in conn.execute(sa.select(db.reservations).order_by(db.reservations.c.acceptance_time,
                                                                        db.reservations.c.id)):
                definition = parse_definition(json.loads(row.definition)) if row.definition else None
                intervals = [(int(a), int(b), (int(v[0]), int(v[1]))) for a, b, v in json.loads(row.intervals)]
                alloc = ReservationAllocation(
                    id=ReservationId.parse(row.id), user=row.user, definition=definition,
                    start=int(row.start), end=int(row.end), intervals=intervals, period=int(row.period),
                    gang=bool(row.gang), acceptance_time=int(row.acceptance_time),
                )
                out.append(StoredReservation(row.queue, alloc))
            ids = {ReservationId.parse(r.id): r.queue for r in conn.execute(sa.select(db.reservation_ids))}
        return out, ids

    # -- cluster objects ------------------------------------------------------------------------
    def put_object(self, conn: Connection, key: ObjectKey, body: dict[str, Any], version: int) -> None:
        """Insert or replace one applied object."""
        kind, ns, name = key
        where = sa.and_(db.objects.c.kind == kind, db.objects.c.namespace == ns, db.objects.c.name == name)
        conn.execute(sa.delete(db.objects).where(where))
        conn.execute(sa.insert(db.objects).values(kind=kind, namespace=ns, name=name,
                                                  body=json.dumps(body, sort_keys=True), version=version))

    def delete_object(self, conn: Connection, key: ObjectKey) -> None:
        """Remove one applied object."""
        kind, ns, name = key
        conn.execute(sa.delete(db.objects).where(
            sa.and_(db.objects.c.kind == kind, db.objects.c.namespace == ns, db.objects.c.name == name)))

    def load_objects(self) -> dict[ObjectKey, dict[str, Any]]:
        """Every applied object, by (kind, namespace, name)."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(db.objects).order_by(db.objects.c.version)).all()
        return {(r.kind, r.namespace, r.name): json.loads(r.body) for r in rows}

    # -- tokens and settings --------------------------------------------------------------------
    def add_token(self, user: str, token: str, now_ms: int) -> None:
        """Store a new token's digest for `user`."""
        with self.engine.begin() as conn:
            conn.execute(sa.insert(db.tokens).values(digest=digest(token), user=user, created=now_ms))

    def token_user(self, token: str) -> str | None:
        """The user a bearer token belongs to, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(db.tokens.c.user).where(db.tokens.c.digest == digest(token))).first()
        return None if row is None else str(row.user)

    def get_meta(self, key: str) -> str | None:
        """A stored setting."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(db.meta.c.value).where(db.meta.c.key == key)).first()
        return None if row is None else str(row.value)

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        """Store a setting."""
        conn.execute(sa.delete(db.meta).where(db.meta.c.key == key))
        conn.execute(sa.insert(db.meta).values(key=key, value=value))
