"""The store's write path under the writer: the upserts and the id sequence sent on the driver's cursor
inside the batch's transaction, the connection the writer keeps on SQLite, and what a failed
transaction leaves (nothing written, the sequence still pending, a fresh connection next time), on
both databases."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from svc_helpers import submission

from apportion.reservation.definition import ReservationId
from apportion.service.core import Service, ServiceConfig
from apportion.service.store import _PUT_QUEUE_OF, _PUT_RESERVATION, _SET_META, driver_sql


def test_the_driver_forms_of_the_statements_name_the_same_parameters() -> None:
    for statement in (_PUT_RESERVATION, _PUT_QUEUE_OF, _SET_META):
        assert driver_sql(statement, "named") == statement.text
        py = driver_sql(statement, "pyformat")
        assert ":" not in py.replace("::", "")
        names = sorted(statement.compile().params)
        assert names and all(f"%({n})s" in py for n in names)
    assert driver_sql(sa.text("SELECT 5 % 2 WHERE x = :x"), "pyformat") == "SELECT 5 %% 2 WHERE x = %(x)s"
    with pytest.raises(ValueError, match="qmark"):
        driver_sql(_SET_META, "qmark")


def _stored(url: str) -> tuple[set[str], int]:
    """The reservation ids and the sequence a fresh service reads back (what was committed)."""
    svc = Service(ServiceConfig(db_url=url, loop=False))
    try:
        ids = {str(r) for e in svc.reservations.plans.values() for r in e.plan.reservations}
        return ids, svc.store.sequence()
    finally:
        svc.close()


def _checkouts(svc: Service) -> dict[int, int]:
    """Connections checked out of the pool, counted per thread from now on."""
    counts: dict[int, int] = {}

    def checkout(*_: Any) -> None:
        me = threading.get_ident()
        counts[me] = counts.get(me, 0) + 1

    sa.event.listen(svc.engine.pool, "checkout", checkout)
    return counts


def test_writes_are_committed_per_batch_and_a_failed_one_leaves_nothing_and_the_sequence_pending(
        db_url: str) -> None:
    svc = Service(ServiceConfig(db_url=db_url, loop=False))
    try:
        counts = _checkouts(svc)
        rids = [svc.new_reservation("alice")[1]["reservation-id"] for _ in range(4)]

        def submit(rid: str) -> Any:
            return svc.writer.submit(lambda: svc.committed(
                lambda: svc.reservations.submit("alice", submission(rid)))).result(timeout=30)

        writer = svc.writer._thread.ident
        sqlite = db_url.startswith("sqlite")
        assert submit(rids[0]) == (202, None)
        first = counts.get(writer, 0)
        assert submit(rids[1]) == (202, None)
        # SQLite: the writer's transactions share one connection; PostgreSQL: one checkout (with the
        # pool's pre-ping) per transaction
        assert counts.get(writer, 0) - first == (0 if sqlite else 1), counts

        def failing() -> None:
            # a reservation write and a handed-out id in the transaction, then a failure
            svc.store.put_queue_of(ReservationId.parse(rids[3]), "dedicated")
            svc.new_reservation("alice")
            raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            svc.writer.submit(failing).result(timeout=30)
        before = counts.get(writer, 0)
        assert submit(rids[2]) == (202, None)
        # the failed transaction dropped the connection: the next one checks out a fresh one
        assert counts.get(writer, 0) - before == 1, counts
    finally:
        svc.close()
    ids, sequence = _stored(db_url)
    assert ids == set(rids[:3])
    # the five handed out, the fifth by the failed job: written by a later transaction
    assert sequence == 5


def test_the_sequence_handed_out_during_a_failed_transaction_is_written_by_the_next(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    svc = Service(ServiceConfig(db_url=url, loop=False))
    try:
        svc.new_reservation("alice")  # 1, pending

        def failing() -> None:
            with svc.store.transaction():
                svc.store.put_queue_of(ReservationId.parse(svc.new_reservation("alice")[1]["reservation-id"]),
                                       "dedicated")
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError):
            svc.writer.submit(failing).result(timeout=30)
        assert svc.store.sequence() == 2  # pending again, not stored
        svc.writer.submit(lambda: svc.committed(lambda: None)).result(timeout=30)
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT value FROM meta WHERE key = 'sequence'")).scalar() == "2"
            assert conn.execute(sa.text("SELECT count(*) FROM reservation_ids")).scalar() == 0
        engine.dispose()
    finally:
        svc.close()
