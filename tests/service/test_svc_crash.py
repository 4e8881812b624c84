"""Crash: kill -9 the server while 200 reservation submissions (and applies) are in flight from
concurrent clients, restart it, and find every acknowledged write with the same allocation, nothing
half-written, and a plan that a replay of the stored reservations shows never over-committed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from svc_helpers import definition, now_ms, over_committed
from svc_server import LiveServer

from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy
from apportion.service.db import make_engine
from apportion.service.store import SqlStore

SUBMISSIONS = 200
CLIENTS = 20
KILL_AFTER = 40  # acknowledged submissions before the kill


def _client_work(url: str, ids: list[int], acked: dict[str, Any], applied: set[str], lock: threading.Lock,
                 deadline: float) -> None:
    with httpx.Client(base_url=url, params={"user.name": f"u{ids[0] % 5}"}, timeout=10.0) as c:
        for i in ids:
            if time.monotonic() > deadline:
                return
            try:
                rid = c.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
                t = now_ms()
                body = {"queue": "dedicated", "reservation-id": rid, "reservation-definition": definition(
                    t, t + 900_000, memory=1024 * (1 + i % 4), vcores=1, containers=2 + i % 3, duration=30_000 + 1000 * (i % 7))}
                r = c.post("/ws/v1/cluster/reservation/submit", json=body)
                if r.status_code == 202:
                    with lock:
                        acked[rid] = None
                    got = c.get("/ws/v1/cluster/reservation/list", params={
                        "queue": "dedicated", "reservation-id": rid, "include-resource-allocations": "true"})
                    with lock:
                        acked[rid] = got.json()["reservations"][0]["resource-allocations"]
                pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "metadata": {"name": f"pg-{i}", "namespace": "crash"}, "spec": {"queue": "batch", "minMember": 1}}
                if c.post("/api/v1/apply", json=pg).status_code == 200:
                    with lock:
                        applied.add(f"pg-{i}")
            except (httpx.HTTPError, ValueError, KeyError, IndexError):
                return  # the server died under us: that request is not acknowledged


def test_kill_9_during_concurrent_submissions(server_factory: Callable[..., LiveServer]) -> None:
    server = server_factory("--schedule-period", "0.2")
    acked: dict[str, Any] = {}
    applied: set[str] = set()
    lock = threading.Lock()
    deadline = time.monotonic() + 60
    shares = [list(range(k, SUBMISSIONS, CLIENTS)) for k in range(CLIENTS)]
    threads = [threading.Thread(target=_client_work, args=(server.url, s, acked, applied, lock, deadline))
               for s in shares]
    for t in threads:
        t.start()
    while time.monotonic() < deadline:
        with lock:
            if len(acked) >= KILL_AFTER:
                break
        time.sleep(0.01)
    server.kill()
    for t in threads:
        t.join(timeout=30)
    assert len(acked) >= KILL_AFTER, server.log()[-2000:]
    assert len(acked) < SUBMISSIONS, "the kill came after every submission: nothing was in flight"

    server.start()
    with httpx.Client(base_url=server.url, params={"user.name": "check"}, timeout=10.0) as c:
        listed = {r["reservation-id"]: r["resource-allocations"] for r in c.get(
            "/ws/v1/cluster/reservation/list",
            params={"queue": "dedicated", "include-resource-allocations": "true"}).json()["reservations"]}
        jobs = {j["podgroup"]["metadata"]["name"] for j in c.get("/api/v1/jobs").json()["items"]}
    missing = [rid for rid in acked if rid not in listed]
    assert not missing, f"acknowledged but lost: {missing[:5]}"
    for rid, alloc in acked.items():
        if alloc is not None:
            assert listed[rid] == alloc, rid
    assert applied <= jobs, f"applied but lost: {sorted(applied - jobs)[:5]}"
    server.stop()

    # replay the stored plan in acceptance order through the policy: every add passes, never over-committed
    engine = make_engine(server.db_url)
    store = SqlStore(engine)
    stored, ids = store.reservations("dedicated"), store.queue_of()
    engine.dispose()
    assert {str(s.id) for s in stored} == set(listed)
    assert all(ids[s.id] == "dedicated" for s in stored)
    plan = InMemoryPlan("dedicated", (131072, 32), policy=CapacityOverTimePolicy(), now=now_ms())
    for s in sorted(stored, key=lambda s: (s.acceptance_time, s.id)):
        assert plan.add_reservation(ReservationAllocation.from_stored(s))
        assert not over_committed(plan)
