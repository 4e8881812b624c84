"""Load: concurrent clients submitting, updating and deleting against a real server on loopback: no
5xx, no duplicate ids, the plan never over-committed, every answer consistent with the final state.
The default suite runs a short bounded version; `make test-slow` runs 50 clients for 20 s."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from svc_helpers import definition, now_ms
from svc_server import LiveServer

from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy
from apportion.service.collector import AUDIT_ENV
from apportion.service.db import make_engine
from apportion.service.store import SqlStore


def _worker(url: str, seed: int, until: float, out: dict[str, object], lock: threading.Lock) -> None:
    rnd = random.Random(seed)
    mine: dict[str, str] = {}  # rid -> "present" | "deleted" as the answers said
    ids: list[str] = []
    statuses: list[int] = []
    with httpx.Client(base_url=url, params={"user.name": f"user{seed % 7}"}, timeout=30.0) as c:
        while time.monotonic() < until:
            live = [r for r, s in mine.items() if s == "present"]
            op = rnd.choice(["submit", "submit", "update", "delete"]) if live else "submit"
            t = now_ms()
            d = definition(t, t + 600_000, memory=1024 * rnd.randint(1, 4), vcores=rnd.randint(1, 2),
                           containers=rnd.randint(1, 4), duration=rnd.randint(10, 120) * 1000)
            if op == "submit":
                rid = c.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
                ids.append(rid)
                r = c.post("/ws/v1/cluster/reservation/submit",
                           json={"queue": "dedicated", "reservation-id": rid, "reservation-definition": d})
                if r.status_code == 202:
                    mine[rid] = "present"
            elif op == "update":
                rid = rnd.choice(live)
                r = c.post("/ws/v1/cluster/reservation/update", json={"reservation-id": rid, "reservation-definition": d})
            else:
                rid = rnd.choice(live)
                r = c.post("/ws/v1/cluster/reservation/delete", json={"reservation-id": rid})
                if r.status_code == 200:
                    mine[rid] = "deleted"
            statuses.append(r.status_code)
    with lock:
        out[f"w{seed}"] = (mine, ids, statuses)


def run_load(server: LiveServer, clients: int, seconds: float) -> None:
    """Drive the server, then check the answers against the final state and the stored plan."""
    out: dict[str, object] = {}
    lock = threading.Lock()
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=_worker, args=(server.url, k, until, out, lock)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 120)
    assert len(out) == clients, "a client died (see the server log)\n" + server.log()[-2000:]
    all_ids: list[str] = []
    expected: dict[str, str] = {}
    codes: list[int] = []
    for mine, ids, statuses in out.values():  # type: ignore[misc]
        all_ids += ids
        expected.update(mine)
        codes += statuses
    assert not [s for s in codes if s >= 500], server.log()[-2000:]
    assert len(all_ids) == len(set(all_ids)), "new-reservation gave an id twice"
    assert sum(1 for s in codes if s < 300) > 0
    listed = {r["reservation-id"] for r in httpx.get(server.url + "/ws/v1/cluster/reservation/list", params={
        "queue": "dedicated", "user.name": "check"}, timeout=30).json()["reservations"]}
    for rid, state in expected.items():
        assert (rid in listed) == (state == "present"), (rid, state)
    server.stop()
    engine = make_engine(server.db_url)
    stored = SqlStore(engine).reservations("dedicated")
    engine.dispose()
    assert {str(s.id) for s in stored} == listed
    plan = InMemoryPlan("dedicated", (131072, 32), policy=CapacityOverTimePolicy(), now=now_ms())
    plan.recover(stored)
    points = sorted({t for r in plan.reservations.values() for a, b, _ in r.intervals for t in (a, b)})
    for t in points:
        m, v = plan.total_at(t)
        assert m <= 131072 and v <= 32, f"over-committed at {t}: {(m, v)}"


def test_short_load(server_factory: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch) -> None:
    # ticks every 0.2 s, so the server freezes what is alive (collector.py) some fifteen times while
    # requests are in flight and connections open and close; when it stops, the audit counts the frozen
    # objects that became cyclic garbage (which only a collection over the whole heap would free)
    monkeypatch.setenv(AUDIT_ENV, "1")
    server = server_factory("--schedule-period", "0.2")
    run_load(server, clients=8, seconds=3.0)
    audit = [line for line in server.log().splitlines() if "cycle collector audit" in line]
    assert audit and "audit: 0 frozen objects were cyclic garbage" in audit[-1], server.log()[-2000:]


@pytest.mark.slow
def test_load_50_clients_20_seconds(server_factory: Callable[..., LiveServer]) -> None:
    run_load(server_factory(), clients=50, seconds=20.0)
