"""The reservation submit path (issue 18's throughput target): group commit on the writer, new-reservation
answered without it, and the reservation write routes, which authenticate the caller before they
read a body (as RMWebServices' initForWritableEndpoints does) and checks the queue ACL before the
handler validates the request."""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_helpers import definition, now_ms, submission
from svc_server import LiveServer

from apportion.reservation.definition import ReservationId
from apportion.service.core import Service, ServiceConfig

ACL_QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: dedicated
  annotations:
    apportion.io/reservable: "true"
    apportion.io/acl-submit-reservations: alice
    apportion.io/acl-administer-reservations: dave
spec:
  guarantee: {resource: {cpu: '32', memory: 128Gi}}
"""


def _stored_ids(url: str) -> set[str]:
    """The reservations a fresh service finds in the database (what was committed)."""
    svc = Service(ServiceConfig(db_url=url, loop=False))
    try:
        return {str(r) for e in svc.reservations.plans.values() for r in e.plan.reservations}
    finally:
        svc.close()


def _hold(svc: Service) -> tuple[Future[Any], threading.Event]:
    """A job that holds the writer until the event is set (it has started when this returns), so
    that what is submitted meanwhile queues up behind it."""
    started, gate = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait()

    busy = svc.writer.submit(hold)
    started.wait(timeout=30)
    return busy, gate


def test_jobs_waiting_together_are_committed_once_and_a_failing_one_undoes_none_of_the_others(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.db'}"
    svc = Service(ServiceConfig(db_url=url, loop=False))
    try:
        ids = [svc.new_reservation("alice")[1]["reservation-id"] for _ in range(6)]
        busy, gate = _hold(svc)

        def submit(rid: str) -> Callable[[], Any]:
            return lambda: svc.committed(lambda: svc.reservations.submit("alice", submission(rid)))

        def failing() -> None:
            # a write in the batch's transaction, then a failure: the write must not survive
            svc.store.put_queue_of(ReservationId.parse(ids[5]), "dedicated")
            raise RuntimeError("boom")

        batches0, jobs = svc.writer.batches, [svc.writer.submit(submit(rid)) for rid in ids[:2]]
        bad = svc.writer.submit(failing)
        jobs += [svc.writer.submit(submit(rid)) for rid in ids[2:5]]
        gate.set()
        busy.result(timeout=30)
        assert [f.result(timeout=30) for f in jobs] == [(202, None)] * 5
        with pytest.raises(RuntimeError, match="boom"):
            bad.result(timeout=30)
        # the gate, then the six as one batch (run again one by one after the failure)
        assert svc.writer.batches - batches0 == 2
        assert {str(r) for r in svc.reservations.queue_of} == set(ids[:5])
    finally:
        svc.close()
    assert _stored_ids(url) == set(ids[:5])


def test_a_burst_of_submissions_shares_commits(tmp_path: Path) -> None:
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'b.db'}", loop=False))
    try:
        _, gate = _hold(svc)
        before = svc.writer.batches

        async def burst() -> list[Any]:
            rids = [(await svc.reservation("new_reservation", "bob", None))[1]["reservation-id"] for _ in range(20)]
            pending = [asyncio.ensure_future(svc.reservation("submit", "bob", submission(r))) for r in rids]
            await asyncio.sleep(0.2)  # all twenty are queued behind the gate
            gate.set()
            return list(await asyncio.gather(*pending))

        assert asyncio.run(burst()) == [(202, None)] * 20
        assert svc.writer.batches - before <= 3  # the gate, and the twenty in one or two batches
    finally:
        svc.close()


def test_new_reservation_does_not_wait_for_the_writer_and_its_sequence_is_stored_with_the_next_commit(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    svc = Service(ServiceConfig(db_url=url, loop=False))
    _, gate = _hold(svc)
    try:
        # answered while the writer is busy: new-reservation only takes the next number, as YARN's does
        rids = [asyncio.run(svc.reservation("new_reservation", "alice", None))[1]["reservation-id"] for _ in range(3)]
        assert [r.rsplit("_", 1)[1] for r in rids] == ["0001", "0002", "0003"]
        gate.set()
        assert svc.writer.submit(lambda: svc.committed(
            lambda: svc.reservations.submit("alice", submission(rids[0])))).result(timeout=30) == (202, None)
        assert svc.store.sequence() == 3
        svc.new_reservation("alice")
    finally:
        gate.set()
        svc.close()
    again = Service(ServiceConfig(db_url=url, loop=False))
    try:
        assert again.reservations.sequence == 4  # stored when the service closed
    finally:
        again.close()


def test_the_caller_is_known_before_the_body_is_read_and_the_acl_is_checked_before_the_request(
        tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(ACL_QUEUE + """---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: '64', memory: 256Gi}}
""")
    server = LiveServer(f"sqlite:///{tmp_path / 'f.db'}", tmp_path, ["--acls", "--cluster", str(tmp_path / "cluster.yaml")])
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            submit = "/ws/v1/cluster/reservation/submit"
            big = b"{" + b" " * (2 * 1024 * 1024) + b"}"
            # nobody named: 401 before anything is read (it was 413 for a large body, 400 for a bad one)
            for body in (big, b"{not json", b""):
                r = c.post(submit, content=body, headers={"content-type": "application/json"})
                assert r.status_code == 401, r.text
                assert r.json()["RemoteException"]["exception"] == "AuthorizationException"
            r = c.post(submit, params={"user.name": "alice"}, content=big)
            assert r.status_code == 413 and r.json()["RemoteException"]["message"] == "Request body is larger than 1 MiB"
            # a caller refused by the queue's ACL gets 403 even for a request the handler would refuse
            rid = c.post("/ws/v1/cluster/reservation/new-reservation", params={"user.name": "bob"}).json()["reservation-id"]
            t = now_ms()
            wrong = {"queue": "dedicated", "reservation-id": rid, "reservation-definition": definition(t, t - 1000)}
            r = c.post(submit, params={"user.name": "bob"}, json=wrong)
            assert r.status_code == 403 and "acl_submit_reservations" in r.text, r.text
            r = c.post(submit, params={"user.name": "alice"}, json=wrong)
            assert r.status_code == 400 and "BadRequestException" in r.text, r.text
            # the cookie a ?user.name= caller gets names it on the next call (yarn-api-client relies on it)
            r = c.post("/ws/v1/cluster/reservation/new-reservation", params={"user.name": "alice"})
            assert r.status_code == 200 and "hadoop.auth" in r.headers["set-cookie"]
            rid = r.json()["reservation-id"]
            assert c.post(submit, json=submission(rid)).status_code == 202
            # the other methods and YARN's error body
            r = c.get(submit)
            assert r.status_code == 405 and "RemoteException" in r.json()
            status = c.get("/api/v1/status").json()
            assert status["writer"]["jobs"] >= status["writer"]["batches"] > 0
    finally:
        server.stop()


def test_a_write_whose_commit_fails_answers_a_one_line_500_and_the_next_one_is_accepted(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy import text

    from apportion.service.app import create_app

    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'e.db'}", loop=False))
    try:
        client = TestClient(create_app(service=svc), raise_server_exceptions=False)
        u = {"user.name": "alice"}
        new = "/ws/v1/cluster/reservation/new-reservation"
        # a real database failure: the store's insert of the reservation is refused by the database
        with svc.engine.begin() as conn:
            conn.execute(text("CREATE TRIGGER refuse BEFORE INSERT ON reservations "
                              "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"))
        rid = client.post(new, params=u).json()["reservation-id"]
        r = client.post("/ws/v1/cluster/reservation/submit", params=u, json=submission(rid))
        assert r.status_code == 500, r.text
        assert r.json() == {"RemoteException": {"exception": "WebApplicationException",
                                                "message": "internal server error (see the server log)",
                                                "javaClassName": "javax.ws.rs.WebApplicationException"}}
        assert "Traceback" not in r.text and "refused by the test" not in r.text
        assert any("internal error" in rec.getMessage() for rec in caplog.records)
        assert not svc.reservations.queue_of  # memory went back to what the database holds
        with svc.engine.begin() as conn:
            conn.execute(text("DROP TRIGGER refuse"))
        rid = client.post(new, params=u).json()["reservation-id"]
        assert client.post("/ws/v1/cluster/reservation/submit", params=u, json=submission(rid)).status_code == 202
    finally:
        svc.close()


def test_the_status_reports_the_last_ticks_cpu_time(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from apportion.service.app import create_app

    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 't.db'}", loop=False))
    try:
        client = TestClient(create_app(service=svc))
        assert client.get("/api/v1/status").json()["lastTickCpuMs"] == 0.0
        svc.writer.submit(svc.loop.tick).result(timeout=60)
        status = client.get("/api/v1/status").json()
        assert status["ticks"] == 1
        # CPU time of the writer thread, so never more than the tick's duration
        assert 0.0 < status["lastTickCpuMs"] <= status["lastTickMs"] + 1.0
    finally:
        svc.close()


def test_requests_run_between_a_ticks_parts_even_one_that_drops_a_plan(tmp_path: Path) -> None:
    """A tick is three writer jobs (follow, publish, schedule): a submit, or an apply that makes the
    reservable queue an ordinary one, may run between them, and the tick still completes."""
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'p.db'}", loop=False))
    try:
        run = svc.writer.submit
        rid = svc.new_reservation("alice")[1]["reservation-id"]
        followed = run(svc.loop.follow).result(timeout=60)
        submit = run(lambda: svc.committed(lambda: svc.reservations.submit("alice", submission(rid))))
        assert submit.result(timeout=60) == (202, None)
        run(lambda: svc.loop.schedule(svc.loop.publish(followed))).result(timeout=60)
        assert svc.live.cache.get("Queue", rid) is None  # published from the step before the submit
        run(svc.loop.tick).result(timeout=60)
        assert svc.live.cache.get("Queue", rid) is not None
        # the queue stops being reservable between the follow and the publish of a tick
        followed = run(svc.loop.follow).result(timeout=60)
        queue = copy.deepcopy(svc.objects.objects[("Queue", "", "dedicated")])
        del queue["metadata"]["annotations"]["apportion.io/reservable"]
        run(lambda: svc._apply_now([("test", queue)], [])).result(timeout=60)
        assert "dedicated" not in svc.reservations.plans
        run(lambda: svc.loop.schedule(svc.loop.publish(followed))).result(timeout=60)
        assert svc.loop.ticks == 3 and svc.loop.last_error is None
        assert svc.live.cache.get("Queue", rid) is None
    finally:
        svc.close()
