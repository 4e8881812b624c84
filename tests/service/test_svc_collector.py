"""The server's cycle-collector schedule (service/collector.py): between ticks what the server made
since the last tick is collected and what is alive is frozen out of later collections; a collection
over the whole heap runs only when it is due and the writer is idle (or after `MAX_INTERVAL`). That
is sound only if nothing the server froze later becomes cyclic garbage: the last test runs the
service's write paths (the same jobs the routes run, on the writer) with the collector settling
between ticks, then audits the frozen objects, and checks that what the reservations held is given
back once they are gone."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from svc_helpers import definition, now_ms

from apportion.service import collector as collector_module
from apportion.service.collector import Collector
from apportion.service.core import Service, ServiceConfig


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> _Node:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return a


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.jobs = 0

    def time(self) -> float:
        return self.now

    def writer_jobs(self) -> int:
        return self.jobs


def test_settle_frees_the_cycles_made_since_the_last_one_and_freezes_what_is_alive() -> None:
    clock = _Clock()
    c = Collector(clock.writer_jobs, clock.time)
    try:
        c.start()
        gone = weakref.ref(_cycle())  # garbage before the settle: collected, never frozen
        kept = _cycle()
        clock.jobs += 10  # requests wrote: no collection over the whole heap
        c.settle()
        assert gone() is None
        assert c.full_collections == 0 and gc.get_freeze_count() >= c.alive_after_full
        # frozen, then garbage: only a collection over everything (here the audit) finds it
        late = weakref.ref(kept)
        del kept
        clock.jobs += 10
        c.settle()
        assert late() is not None
        assert c.audit()["_Node"] == 2
        assert late() is None
    finally:
        c.stop()
    assert gc.get_freeze_count() == 0


def test_the_whole_heap_is_collected_once_grown_and_only_when_idle_or_after_the_longest_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector_module, "GROWTH", 0.01)
    clock = _Clock()
    c = Collector(clock.writer_jobs, clock.time)
    try:
        c.start()
        base = c.alive_after_full
        frozen_garbage = _cycle()
        gone = weakref.ref(frozen_garbage)
        c.settle()  # idle, not grown
        assert c.full_collections == 0
        del frozen_garbage
        kept = [[k] for k in range(base // 50 + 10)]  # more than GROWTH of what is alive
        clock.jobs += 4  # more than a tick's three jobs: requests were served
        c.settle()
        assert c.full_collections == 0 and gone() is not None
        clock.jobs += collector_module.TICK_JOBS  # a tick alone: idle
        c.settle()
        assert c.full_collections == 1 and gone() is None
        assert c.alive_after_full == c.frozen == gc.get_freeze_count() > base
        more = [[k] for k in range(base // 50 + 10)]
        clock.jobs += 100
        c.settle()
        assert c.full_collections == 1
        clock.now += collector_module.MAX_INTERVAL
        clock.jobs += 100
        c.settle()  # busy, but the last one is too long ago
        assert c.full_collections == 2
        assert len(kept) == len(more)
        assert c.max_pause_ms > 0 and c.pause_ms >= c.max_pause_ms and c.max_pause_cpu_ms > 0
    finally:
        c.stop()
    assert gc.get_freeze_count() == 0


def test_objects_frozen_then_freed_by_reference_counting_do_not_make_a_collection_due(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collector_module, "GROWTH", 0.01)
    clock = _Clock()
    c = Collector(clock.writer_jobs, clock.time)
    try:
        c.start()
        base = c.alive_after_full
        churn = [[k] for k in range(base // 50 + 10)]
        clock.jobs += 100
        c.settle()
        assert c.frozen > base * 1.01
        del churn  # freed by reference counting, though frozen
        clock.jobs += collector_module.TICK_JOBS
        c.settle()  # idle and the count says grown: counted again, it has not
        assert c.full_collections == 0 and c.frozen == gc.get_freeze_count() < base * 1.01
    finally:
        c.stop()


def test_a_collector_not_started_changes_nothing() -> None:
    c = Collector()
    c.settle()
    c.stop()
    assert gc.get_freeze_count() == 0


def _job(name: str, pods: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [(f"{name} pg", {
        "kind": "PodGroup", "metadata": {"name": name, "namespace": "t"},
        "spec": {"queue": "batch", "minMember": pods}})]
    for i in range(pods):
        out.append((f"{name} pod {i}", {
            "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "t", "annotations": {
                "scheduling.k8s.io/group-name": name, "apportion.io/duration": "2"}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}))
    return out


async def _serve(svc: Service, clock: list[int], rounds: int, per_round: int) -> tuple[int, int]:
    """Submit, update, refuse and delete reservations and apply and delete jobs as the routes do (each a
    writer job), a tick between rounds, the collector settling after each; returns how many were
    accepted and the frozen objects while all of them were alive."""
    accepted: list[tuple[str, str]] = []
    for k in range(rounds):
        for i in range(per_round):
            clock[0] += 7
            rid = svc.new_reservation("alice")[1]["reservation-id"]
            body = {"queue": "dedicated", "reservation-id": rid, "reservation-definition": definition(
                clock[0], clock[0] + 600_000 + 1000 * i, memory=1024, vcores=1, containers=1, duration=1000)}
            status, _ = await svc.reservation("submit", f"user{i % 5}", body)
            if status == 202:
                accepted.append((rid, f"user{i % 5}"))
        # an update of each of a few, a submit the plan refuses, one the handler refuses
        for rid, user in accepted[-3:]:
            status, _ = await svc.reservation("update", user, {"reservation-id": rid, "reservation-definition":
                                                                 definition(clock[0], clock[0] + 900_000, memory=2048,
                                                                            vcores=1, containers=1, duration=2000)})
            assert status == 200
        rid = svc.new_reservation("alice")[1]["reservation-id"]
        big = definition(clock[0], clock[0] + 60_000, memory=10**9, vcores=1, containers=1, duration=1000)
        assert (await svc.reservation("submit", "alice", {"queue": "dedicated", "reservation-id": rid,
                                                           "reservation-definition": big}))[0] == 400
        assert (await svc.reservation("submit", "alice", {"queue": "dedicated"}))[0] == 400
        await svc.apply(_job(f"j{k}", 2), [])
        if k:
            await svc.apply([], [("PodGroup", "t", f"j{k - 1}"), ("Pod", "t", f"j{k - 1}-0"), ("Pod", "t", f"j{k - 1}-1")])
        await svc.loop.run_tick()
    assert not svc.collector.audit()
    alive = gc.get_freeze_count()
    for rid, user in accepted[::2]:
        assert (await svc.reservation("delete", user, {"reservation-id": rid}))[0] == 200
    await svc.loop.run_tick()
    # every reservation ends and the policy's window (a day) passes: the followers archive the rest
    clock[0] += 2 * 86_400_000
    for _ in range(3):
        clock[0] += 1000
        await svc.loop.run_tick()
    return len(accepted), alive


def test_the_service_write_paths_leave_no_frozen_cycle_and_give_back_what_reservations_held(
        tmp_path: Path) -> None:
    clock = [now_ms()]
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'gc.db'}", loop=False, clock=lambda: clock[0]))
    c = svc.collector
    try:
        c.start()
        svc.loop.between_ticks = c.settle
        svc.loop.between_parts = c.collect_young  # as the server sets them: between a tick's jobs too
        asyncio.run(svc.loop.run_tick())
        found = [c.audit()]
        # the first round fills what the process caches once (SQL statements, plugins' tables)
        asyncio.run(_serve(svc, clock, rounds=3, per_round=50))
        found.append(c.audit())
        base = gc.get_freeze_count()
        accepted, alive = asyncio.run(_serve(svc, clock, rounds=6, per_round=50))
        assert accepted >= 250
        assert not sum(len(e.plan.reservations) for e in svc.reservations.plans.values())
        found.append(c.audit())
        after = gc.get_freeze_count()
    finally:
        c.stop()
        svc.close()
    assert not any(found), f"frozen objects that became cyclic garbage: {found}"
    # what a reservation holds (its allocation, step function, follower entry, queue) is some forty
    # tracked objects; once they are gone, what remains of each is its id -> queue record (spec §5.6)
    assert alive - base > 20 * accepted
    assert after - base < 2 * accepted, (base, alive, after)
