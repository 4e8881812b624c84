"""SqlStore: what the service keeps in its database, and how it reads it back at start.

It is the reservation system's `PlanStore` (reservation/store.py) on SQL: per plan the stored
reservations (user, definition, start, end, period, gang flag, acceptance time, allocation
intervals), the id -> queue record of accepted submissions and the id sequence, so recovery puts
the very same allocations back into the plans without asking the agent or the policy again (YARN's
RM recovery). It also keeps the applied cluster objects, token digests and small settings.

A write made inside `transaction()` joins that transaction: the writer opens one per batch of
requests, so everything one request changes (a plan edit and its id record, an apply of many
objects) is in one commit, made before the answer is sent. A write outside a transaction commits on
its own. The reservation and id upserts of a transaction, and the id sequence, are sent together,
one executemany per table on the driver's cursor, before its commit and before any other statement
or read of it, so the database sees them in their order. On SQLite the writer thread keeps one
connection (`hold`) for all its transactions; a transaction that fails drops it, and the next one
checks a fresh connection out of the pool.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from apportion.reservation.definition import (
    YARN_DIMS,
    YARN_TO_PLAN,
    ReservationDefinition,
    ReservationId,
    parse_definition,
)
from apportion.reservation.stepfn import Res
from apportion.reservation.store import StoredReservation
from apportion.service import db

ObjectKey = tuple[str, str, str]

# The writes every reservation request makes, as single upserts (SQLite >= 3.24 and PostgreSQL both
# have ON CONFLICT): one statement each instead of a delete (or select) and an insert. "user", "start"
# and "end" are quoted: PostgreSQL reserves them.
_PUT_RESERVATION = sa.text(
    'INSERT INTO reservations (id, queue, "user", definition, "start", "end", period, gang, acceptance_time, '
    'intervals) VALUES (:id, :queue, :user, :definition, :start, :end, :period, :gang, :acceptance_time, '
    ':intervals) ON CONFLICT (id) DO UPDATE SET queue = excluded.queue, "user" = excluded."user", '
    'definition = excluded.definition, "start" = excluded."start", "end" = excluded."end", '
    'period = excluded.period, gang = excluded.gang, acceptance_time = excluded.acceptance_time, '
    'intervals = excluded.intervals')
_PUT_QUEUE_OF = sa.text("INSERT INTO reservation_ids (id, queue) VALUES (:id, :queue) ON CONFLICT (id) DO NOTHING")
_SET_META = sa.text("INSERT INTO meta (key, value) VALUES (:key, :value) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
#: the statements `_flush_rows` sends on the driver's cursor, in their order
_QUEUED = (_PUT_RESERVATION, _PUT_QUEUE_OF, _SET_META)
_PARAM = re.compile(r":(\w+)")


def driver_sql(statement: sa.TextClause, paramstyle: str) -> str:
    """A `:name` statement in the driver's parameter style (sqlite3 reads `:name` itself, psycopg
    `%(name)s`), for an executemany on the driver's cursor: SQLAlchemy's execution of a text clause
    binds every row's parameters in Python, which cost more than the database's work on them."""
    if paramstyle == "named":
        return statement.text
    if paramstyle == "pyformat":
        return _PARAM.sub(r"%(\1)s", statement.text.replace("%", "%%"))
    raise ValueError(f"no driver form of the store's statements for paramstyle {paramstyle!r}")


def _dump(body: Any) -> str:
    """An object as stored JSON, keys sorted: orjson, or the json module for what orjson cannot write (an
    integer beyond 64 bits in a field apportion does not read)."""
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(body, sort_keys=True)


def definition_json(d: ReservationDefinition, dims: tuple[str, ...] = YARN_DIMS) -> dict[str, Any]:
    """The definition as REST JSON, with its real priority (the list reply always says 0); `dims` names
    the capabilities' components (a plan with other types stores them as `resourceInformations`)."""
    out = d.to_json(dims)
    out["priority"] = d.priority
    return out


def interval_json(a: int, b: int, v: Res, dims: tuple[str, ...]) -> list[Any]:
    """One allocation entry as stored: `[start, end, [memory, vcores]]`, then, when a type of a plan's
    other ones is not 0, an object of them by name (so a plan that gains a type reads it back)."""
    extra = {n: x for n, x in zip(dims[2:], v[2:]) if x}
    return [a, b, [v[0], v[1]], extra] if extra else [a, b, [v[0], v[1]]]


def interval_types(text: str) -> set[str]:
    """The resource types other than memory and vCores a stored `intervals` text holds."""
    return {n for e in json.loads(text) if len(e) > 3 for n in e[3]}


def definition_types(text: str | None) -> set[str]:
    """The resource types a stored definition names (as the plan names them)."""
    if not text:
        return set()
    out: set[str] = set()
    stages = (json.loads(text).get("reservation-requests") or {}).get("reservation-request") or []
    for st in stages if isinstance(stages, list) else [stages]:
        infos = ((st.get("capability") or {}).get("resourceInformations") or {}).get("resourceInformation") or []
        for info in infos if isinstance(infos, list) else [infos]:
            out.add(YARN_TO_PLAN.get(info["name"], info["name"]))
    return out


def digest(token: str) -> str:
    """SHA-256 of a bearer token: tokens are long random strings, so a fast hash is enough."""
    return hashlib.sha256(token.encode()).hexdigest()


class SqlStore:
    """Reads and writes of the service database (SQLite or PostgreSQL); a `PlanStore`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # the open transaction belongs to the thread that opened it (the writer); readers never join it
        self._local = threading.local()
        # the id sequence handed out but not yet written, and the last one written (see put_sequence)
        self._pending_lock = threading.Lock()
        self._pending_sequence = 0
        self._stored_sequence = 0
        #: each plan's resource types, as configure_plans made it: how its vectors are stored and read
        self.dims: dict[str, tuple[str, ...]] = {}
        # sqlite3 reads `:name` whatever style it announces; psycopg's is pyformat
        style = "named" if engine.dialect.name == "sqlite" else str(getattr(engine.dialect.dbapi, "paramstyle", ""))
        self._driver_sql = {st: driver_sql(st, style) for st in _QUEUED}

    @property
    def _conn(self) -> Connection | None:
        return getattr(self._local, "conn", None)

    @_conn.setter
    def _conn(self, conn: Connection | None) -> None:
        self._local.conn = conn

    def in_transaction(self) -> bool:
        """Whether this thread has a transaction open (the writer's batch)."""
        return self._conn is not None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While inside, this thread's transactions reuse one connection (the writer holds it for its
        life): a checkout from the pool and its return cost more than a small batch's SQL did. SQLite
        only: its connection is a file in this process, which nothing outside can drop, where a
        PostgreSQL connection is checked out per transaction so that the pool's pre-ping replaces one
        the server closed before a transaction fails on it."""
        if self.engine.dialect.name != "sqlite":
            yield
            return
        self._local.holding = True
        try:
            yield
        finally:
            self._local.holding = False
            self._drop_held()

    def _drop_held(self) -> None:
        conn: Connection | None = getattr(self._local, "held", None)
        self._local.held = None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection is being dropped anyway
                conn.invalidate()

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A connection in a transaction (committed at the end, rolled back on error): the held one
        when this thread holds one, dropped after a failure (it may be broken: the next transaction
        checks out a fresh one, with the pool's pre-ping), else one from the pool for this one."""
        if not getattr(self._local, "holding", False):
            with self.engine.begin() as conn:
                yield conn
            return
        held: Connection | None = getattr(self._local, "held", None)
        if held is None:
            held = self._local.held = self.engine.connect()
        try:
            with held.begin():
                yield held
        except BaseException:
            self._drop_held()
            raise

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction for every write made inside it; committed at the end, rolled back on error."""
        if self._conn is not None:
            yield self._conn
            return
        with self._connection() as conn:
            self._conn = conn
            self._local.rows = {}
            self._local.sequence = 0
            try:
                yield conn
                self._flush_rows(conn)
            except BaseException:
                # not written: the next transaction writes it
                self._repend(self._local.sequence)
                raise
            finally:
                self._conn = None
                self._local.rows = {}

    def _queue_row(self, statement: sa.TextClause, row: dict[str, Any]) -> None:
        """A reservation upsert, sent with the others of its kind when the transaction commits (or
        before any other statement of it): a writer batch of n submits makes one executemany of n rows
        per table, where one statement each cost more than the SQLite work it asked for."""
        if self._conn is None:
            with self.transaction():
                self._queue_row(statement, row)
            return
        self._local.rows.setdefault(statement, []).append(row)

    def _flush_rows(self, conn: Connection) -> None:
        """Send the queued upserts and the pending id sequence, each table's in the order they were
        made, as one executemany each on the driver's cursor (inside the connection's transaction)."""
        if conn is not self._conn:
            return
        rows: dict[sa.TextClause, list[dict[str, Any]]] = self._local.rows
        with self._pending_lock:
            seq, self._pending_sequence = self._pending_sequence, 0
        if seq > self._stored_sequence:
            rows.setdefault(_SET_META, []).append({"key": "sequence", "value": str(seq)})
            self._local.sequence = max(self._local.sequence, seq)
            self._stored_sequence = seq
        if not rows:
            return
        self._local.rows = {}
        cursor = conn.connection.cursor()
        try:
            for statement in _QUEUED:
                params = rows.get(statement)
                if params:
                    cursor.executemany(self._driver_sql[statement], params)
        finally:
            cursor.close()

    def _repend(self, seq: int) -> None:
        """A sequence whose write was rolled back is pending again (and not stored)."""
        if seq:
            with self._pending_lock:
                self._pending_sequence = max(self._pending_sequence, seq)
                if self._stored_sequence <= seq:
                    self._stored_sequence = 0

    # -- PlanStore ------------------------------------------------------------------------------
    def put_reservation(self, queue: str, res: StoredReservation) -> None:
        """Store (or replace) an accepted reservation of the plan of `queue`."""
        dims = self.dims.get(queue, YARN_DIMS)
        d = res.definition
        row = {
            "id": str(res.id), "queue": queue, "user": res.user,
            "definition": orjson.dumps(definition_json(d, dims)).decode() if d is not None else None,
            "start": res.start, "end": res.end, "period": res.period, "gang": res.gang,
            "acceptance_time": res.acceptance_time,
            "intervals": orjson.dumps([interval_json(a, b, v, dims) for a, b, v in res.intervals]).decode(),
        }
        self._queue_row(_PUT_RESERVATION, row)

    def delete_reservation(self, queue: str, rid: ReservationId) -> None:
        """Forget a reservation (deleted, archived or replanned away)."""
        with self.transaction() as conn:
            self._flush_rows(conn)
            conn.execute(sa.delete(db.reservations).where(
                sa.and_(db.reservations.c.id == str(rid), db.reservations.c.queue == queue)))

    def reservations(self, queue: str) -> list[StoredReservation]:
        """Every stored reservation of the plan of `queue`, in id order, its vectors in the plan's
        dimensions (`self.dims[queue]`; memory and vCores when unset)."""
        dims = self.dims.get(queue, YARN_DIMS)
        with self._reader() as conn:
            rows = conn.execute(sa.select(db.reservations).where(db.reservations.c.queue == queue)).all()
        out = []
        for row in rows:
            intervals = []
            for e in json.loads(row.intervals):
                extra = e[3] if len(e) > 3 else {}
                intervals.append((int(e[0]), int(e[1]),
                                  (int(e[2][0]), int(e[2][1]), *(int(extra.get(n, 0)) for n in dims[2:]))))
            out.append(StoredReservation(
                id=ReservationId.parse(row.id), user=row.user,
                definition=parse_definition(json.loads(row.definition), dims=dims) if row.definition else None,
                start=int(row.start), end=int(row.end), intervals=tuple(intervals),
                period=int(row.period), gang=bool(row.gang), acceptance_time=int(row.acceptance_time)))
        return sorted(out, key=lambda r: r.id)

    def reservation_types(self, queue: str) -> set[str]:
        """The resource types other than memory and vCores the stored reservations of `queue` hold: its
        plan is made with them, so recovery reads every vector whole."""
        with self._reader() as conn:
            rows = conn.execute(sa.select(db.reservations.c.definition, db.reservations.c.intervals)
                                .where(db.reservations.c.queue == queue)).all()
        out: set[str] = set()
        for row in rows:
            out |= interval_types(row.intervals) | definition_types(row.definition)
        return out - set(YARN_DIMS)

    def reservation_queues(self) -> set[str]:
        """The queues that hold stored reservations."""
        with self._reader() as conn:
            return {str(r[0]) for r in conn.execute(sa.select(db.reservations.c.queue).distinct())}

    def put_queue_of(self, rid: ReservationId, queue: str) -> None:
        """Record the queue of an accepted submit (never removed)."""
        self._queue_row(_PUT_QUEUE_OF, {"id": str(rid), "queue": queue})

    def queue_of(self) -> dict[ReservationId, str]:
        """Every id -> queue record."""
        with self._reader() as conn:
            return {ReservationId.parse(r.id): str(r.queue) for r in conn.execute(sa.select(db.reservation_ids))}

    def put_sequence(self, seq: int) -> None:
        """The last reservation id sequence number handed out. It is written by the next transaction
        the writer commits (new-reservation is answered without the writer, as YARN keeps its counter
        in memory only), e.g. the submit that uses the id, or by one open now. Ids carry the server's
        start time, so an id handed out but not yet stored when the server stops is never handed out
        again by the next server."""
        with self._pending_lock:
            self._pending_sequence = max(self._pending_sequence, seq)

    def sequence(self) -> int:
        """The last sequence number stored (0 when none was)."""
        v = self.get_meta("sequence")
        self._stored_sequence = int(v) if v is not None else 0
        return max(self._stored_sequence, self._pending_sequence)

    @contextmanager
    def _reader(self) -> Iterator[Connection]:
        if self._conn is not None:
            self._flush_rows(self._conn)  # a read inside the transaction sees its writes
            yield self._conn
        else:
            with self.engine.connect() as conn:
                yield conn

    # -- cluster objects ------------------------------------------------------------------------
    def put_objects(self, conn: Connection, items: list[tuple[ObjectKey, dict[str, Any], int]]) -> None:
        """Insert or replace applied objects (key, body, version), two batched statements."""
        if not items:
            return
        self._flush_rows(conn)
        o = db.objects.c
        conn.execute(sa.delete(db.objects).where(sa.and_(o.kind == sa.bindparam("k"), o.namespace == sa.bindparam("n"),
                                                         o.name == sa.bindparam("m"))),
                     [{"k": k, "n": ns, "m": name} for (k, ns, name), _, _ in items])
        conn.execute(sa.insert(db.objects), [
            {"kind": k, "namespace": ns, "name": name, "body": _dump(body), "version": v}
            for (k, ns, name), body, v in items])

    def delete_object(self, conn: Connection, key: ObjectKey) -> None:
        """Remove one applied object."""
        kind, ns, name = key
        self._flush_rows(conn)
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
        with self._reader() as conn:
            row = conn.execute(sa.select(db.meta.c.value).where(db.meta.c.key == key)).first()
        return None if row is None else str(row.value)

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        """Store a setting."""
        self._flush_rows(conn)
        conn.execute(_SET_META, {"key": key, "value": value})
