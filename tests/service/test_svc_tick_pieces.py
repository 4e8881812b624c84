"""A tick as the server runs it, in pieces with requests between them (loop.parts): the followers'
work ahead of the step and the publishing of their queues in bounded writer jobs. Requests that run
between the pieces ahead of the step meet the state a tick leaves before it starts, and those that
run between the publishing jobs meet what they would between a tick's follow and publish: two
services driven alike, one ticking in whole parts and one in pieces of two reservations or two queue
events, hold the same cache (objects, records and their order), stored objects, plans and waiting
reasons after every tick, with reservations submitted and deleted, jobs routed into reservations
that start, end or were never active, the reservable queue made ordinary and reservable again, and
the state reloaded, between the pieces."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from svc_helpers import definition

import apportion.service.loop as loop_module
from apportion.service.core import Service, ServiceConfig
from apportion.state.check import check_cache

T0 = 1_800_000_000_000
KINDS = ("Queue", "PodGroup", "Pod")


def _job(name: str, rid: str | None) -> list[tuple[str, Any]]:
    ann = {"apportion.io/reservation": rid} if rid else {}
    return [(f"{name} pg", {"kind": "PodGroup", "metadata": {"name": name, "namespace": "t", "annotations": ann},
                            "spec": {"queue": "dedicated", "minMember": 1}}),
            (f"{name} pod", {"kind": "Pod", "metadata": {"name": f"{name}-0", "namespace": "t",
                                                         "annotations": {"scheduling.k8s.io/group-name": name}},
                             "spec": {"schedulerName": "volcano", "containers": [
                                 {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
                             "status": {"phase": "Pending"}})]


class _Ops:
    """The requests of one round, drawn once and run alike on both services."""

    def __init__(self, rng: random.Random, clock: int, round_no: int) -> None:
        self.steps: list[tuple[Any, ...]] = []
        for _ in range(rng.randrange(0, 5)):
            start = clock + rng.choice([0, 0, 1_000, 5_000, 40_000])
            self.steps.append(("submit", start, start + rng.choice([3_000, 20_000, 600_000]),
                               rng.choice([1024, 4096]), rng.randrange(1, 3)))
        if rng.random() < 0.3:
            self.steps.append(("delete", rng.randrange(1000)))
        if rng.random() < 0.5:
            self.steps.append(("job", f"j{round_no}", rng.randrange(1000), rng.random() < 0.2))
        if rng.random() < 0.1:
            self.steps.append(("reservable", False))
            if rng.random() < 0.5:
                self.steps.append(("reservable", True))
        if rng.random() < 0.08:
            self.steps.append(("reload",))

    def run(self, svc: Service, made: list[str]) -> None:
        for s in self.steps:
            kind = s[0]
            svc.set_now(svc.clock())
            if kind == "submit":
                rid = svc.reservations.new_reservation("alice")[1]["reservation-id"]
                body = {"queue": "dedicated", "reservation-id": rid,
                        "reservation-definition": definition(s[1], s[2], memory=s[3], vcores=1, containers=s[4],
                                                             duration=2_000)}
                status, _ = svc.committed(lambda: svc.reservations.submit("alice", body))  # noqa: B023
                made.append(rid) if status == 202 else None
            elif kind == "delete" and made:
                rid = made[s[1] % len(made)]
                svc.committed(lambda: svc.reservations.delete("alice", {"reservation-id": rid}))  # noqa: B023
            elif kind == "job":
                rid = (made[s[2] % len(made)] if made else None) if not s[3] else "reservation_1_9999"
                svc._apply_now(_job(s[1], rid), [])
            elif kind == "reservable":
                queue = copy.deepcopy(svc.objects.objects[("Queue", "", "dedicated")])
                ann = queue["metadata"].setdefault("annotations", {})
                if s[1]:
                    ann["apportion.io/reservable"] = "true"
                else:
                    ann.pop("apportion.io/reservable", None)
                svc._apply_now([("test", queue)], [])
            elif kind == "reload":
                svc._reload_after_failure()


def _whole(svc: Service, before: _Ops, middle: _Ops, made: list[str]) -> None:
    before.run(svc, made)
    loop = svc.loop
    followed = loop.follow()
    middle.run(svc, made)
    loop.schedule(loop.publish(followed))


def _pieces(svc: Service, before: _Ops, middle: _Ops, made: list[str], rng: random.Random) -> dict[str, int]:
    """The tick's writer jobs one by one, `before` after the first piece ahead of the step (or before
    the step when there is none) and `middle` before a publishing job other than the first: between
    the follow and the last publishing job, as a whole tick's requests run between its follow and its
    publish. Returns the jobs of each part."""
    parts = svc.loop.parts()
    jobs: dict[str, int] = {}
    result: Any = None
    ran_before = ran_middle = False
    at = -1
    while True:
        try:
            part, fn = parts.send(result)
        except StopIteration:
            break
        if part == "follow" and not ran_before:
            before.run(svc, made)
            ran_before = True
        if part == "publish" and not ran_middle and jobs.get("publish", 0) == at:
            middle.run(svc, made)
            ran_middle = True
        jobs[part] = jobs.get(part, 0) + 1
        result = fn()
        if part == "prepare" and not ran_before:
            before.run(svc, made)
            ran_before = True
        elif part == "follow" and rng.random() < 0.2:
            middle.run(svc, made)  # before the first publishing job
            ran_middle = True
        elif part == "publish" and jobs[part] == 1:
            # the first job said how many events follow: then the chunks, then the last job
            chunks = -(-len(result[3]) // loop_module.PUBLISH_EVENTS)
            at = rng.randint(1, 1 + chunks)
    assert ran_middle
    return jobs


def _state(svc: Service) -> dict[str, Any]:
    cache = svc.live.cache
    return {"cache": {k: list(cache.raw[k].items()) for k in KINDS},
            # a task compares by identity: the records as they print
            "records": {k: [(key, where, repr(rec)) for key, (where, rec) in cache.records.table(k).items()]
                        for k in KINDS},
            "objects": dict(svc.objects.objects), "waiting": dict(svc.loop.waiting),
            "plans": {n: sorted((str(r.id), r.intervals) for r in e.plan.reservations.values())
                      for n, e in svc.reservations.plans.items()},
            "hidden": dict(svc.live.hidden), "generated": set(svc.live.generated)}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_tick_in_pieces_leaves_what_a_tick_in_whole_parts_leaves(tmp_path: Path, seed: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "PREPARE_BUDGET", 2)
    monkeypatch.setattr(loop_module, "PUBLISH_EVENTS", 2)
    clock = [T0]
    whole = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'w.db'}", loop=False, clock=lambda: clock[0]))
    split = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 's.db'}", loop=False, clock=lambda: clock[0]))
    rng, order = random.Random(seed), random.Random(seed + 100)
    made_w: list[str] = []
    made_s: list[str] = []
    most: dict[str, int] = {}
    try:
        for round_no in range(40):
            before, middle = _Ops(rng, clock[0], round_no), _Ops(rng, clock[0], round_no + 1000)
            _whole(whole, before, middle, made_w)
            jobs = _pieces(split, before, middle, made_s, order)
            most = {p: max(most.get(p, 0), n) for p, n in jobs.items()}
            assert made_w == made_s
            assert _state(whole) == _state(split), round_no
            check_cache(split.live.cache)
            assert whole.loop.last_error is None and split.loop.last_error is None
            clock[0] += rng.choice([500, 1_000, 3_000, 30_000])
        assert most["prepare"] > 3 and most["publish"] > 4  # the budgets bound the pieces
        assert any(split.live.cache.raw["Queue"].get(rid) for rid in made_s)
    finally:
        whole.close()
        split.close()
