"""A forecast from the live cache equals what the service then does (issue 21's exactness, for the
service): with every runtime known (`apportion.io/duration`), no new work and the service's clock
stepped a period at a time, each waiting job starts at the tick the forecast gave it, including jobs
held out of the scheduler until their reservation starts, jobs in queues whose reservations start,
grow and end meanwhile, evictions by reclaim and preempt, and a hierarchical capacity tree.

The service runs in process (no HTTP) on a clock the test moves; the forecast is taken as the
endpoint takes it (`forecasts._between_ticks`, `forecast_plans.plans_ahead`)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from svc_helpers import definition, job_objects

from apportion.forecast.api import forecast_snapshot
from apportion.forecast.core import Forecast
from apportion.kube.fields import Fields
from apportion.kube.objects import parse_queue
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.service.core import Service, ServiceConfig
from apportion.service.forecast_plans import MirrorPlan, PlanTimeline, plans_ahead, take_plans
from apportion.service.forecasts import _between_ticks
from apportion.service.publish import reservation_queues

T0 = 1_800_000_000_000  # a whole second: the ticks and the plan's 1 s step line up
GROUP = "scheduling.k8s.io/group-name"

CONFS = {
    "default": None,
    "hierarchy": "  - name: capacity\n    enableHierarchy: true\n",
    "capacity": "  - name: capacity\n",
    "proportion": "  - name: proportion\n",
}


def _conf(plugin: str) -> tuple[str, dict[str, Any]]:
    text = ('actions: "enqueue, allocate, backfill, reclaim, preempt"\ntiers:\n- plugins:\n  - name: priority\n'
            "  - name: gang\n- plugins:\n  - name: drf\n  - name: predicates\n" + plugin + "  - name: nodeorder\n")
    return ("conf", {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "volcano-scheduler-configmap", "namespace": "kube-system"},
                     "data": {"volcano-scheduler.conf": text}})


def _job(name: str, queue: str, pods: int, cpu: str, seconds: int,
         annotations: dict[str, str] | None = None) -> list[tuple[str, Any]]:
    return job_objects(name, queue, pods, annotations, cpu=cpu, seconds=seconds)


class Cluster:
    """The service on a clock the test moves, a tick a second."""

    def __init__(self, tmp: Path) -> None:
        self.clock = T0
        self.svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp / 'a.db'}", loop=False, clock=lambda: self.clock))
        self.svc.set_now(T0)

    def reserve(self, arrival_s: int, deadline_s: int, containers: int, vcores: int, seconds: int) -> str | None:
        """A reservation in `dedicated`'s plan (its id, None when the plan refuses it)."""
        svc = self.svc
        rid: str = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        body = {"queue": "dedicated", "reservation-id": rid, "reservation-definition": definition(
            T0 + arrival_s * 1000, T0 + deadline_s * 1000, memory=4096, vcores=vcores, containers=containers,
            duration=seconds * 1000)}
        status, _ = svc.committed(lambda: svc.reservations.submit("alice", body))
        return rid if status == 202 else None

    def tick(self) -> None:
        self.svc.loop.tick()
        self.clock += 1000

    def forecast(self, horizon: float | None = None) -> Forecast:
        """Every waiting job's forecast, as the endpoint takes it (no fits)."""
        snap, conf, now_ms, taken = _between_ticks(self.svc)
        live = plans_ahead(taken, snap.queues, snap.jobs, now_ms)
        return forecast_snapshot(snap, None, conf=conf, now=datetime.fromtimestamp(now_ms / 1000, tz=UTC),
                                 fits=False, live=live, horizon=horizon)

    def starts(self, jobs: set[str], limit: int) -> dict[str, float]:
        """Tick until every job in `jobs` has a pod running (or `limit` ticks): each one's first
        tick, in seconds after T0."""
        seen: dict[str, float] = {}
        for _ in range(limit):
            at = (self.clock - T0) / 1000
            self.svc.loop.tick()
            for (kind, ns, _), o in self.svc.objects.objects.items():
                if kind == "Pod" and o["status"]["phase"] in ("Running", "Succeeded"):
                    seen.setdefault(f"{ns}/{o['metadata']['annotations'][GROUP]}", at)
            self.clock += 1000
            if jobs <= seen.keys():
                break
        return seen


def _random_cluster(tmp: Path, seed: int, conf: str | None) -> tuple[Cluster, set[str]]:
    rng = random.Random(seed)
    c = Cluster(tmp)
    rids = [r for r in (c.reserve(a, a + rng.randint(60, 400), rng.randint(1, 4), rng.choice([1, 2, 4, 8]),
                                  rng.randint(20, 120)) for a in (rng.randint(0, 120) for _ in range(rng.randint(1, 4))))
            if r is not None]
    objs: list[tuple[str, Any]] = [_conf(conf)] if conf else []
    held = set()
    for j in range(rng.randint(3, 9)):
        queue = rng.choice(["batch", "default", "dedicated", "dedicated"])
        ann = None
        if queue == "dedicated" and rids and rng.random() < 0.6:
            ann = {"apportion.io/reservation": rng.choice(rids)}
            held.add(f"t/j{j}")
        objs += _job(f"j{j}", queue, rng.randint(1, 4), str(rng.choice([1, 2, 4, 8, 15])), rng.randint(10, 150), ann)
    c.svc._apply_now(objs, [])
    for _ in range(rng.randint(1, 30)):
        c.tick()
    return c, held


#: how far the exactness tests look ahead (s): a job the forecast does not start by then must not start
#: by then either
HORIZON = 240


def _check_exact(tmp: Path, seed: int, conf: str | None) -> set[str]:
    c, _ = _random_cluster(tmp, seed, conf)
    try:
        fc = c.forecast(HORIZON)
        at = (fc.now.timestamp() * 1000 - T0) / 1000
        want = {j.job: None if j.start_in is None else at + j.start_in for j in fc.jobs}
        seen = c.starts(set(want), HORIZON + 1)
        assert {u: seen.get(u) for u in want} == want, seed
        return {j.job for j in fc.jobs if j.held_for}
    finally:
        c.svc.close()


@pytest.mark.parametrize("conf", sorted(CONFS))
def test_the_forecast_is_what_the_service_then_does(tmp_path: Path, conf: str) -> None:
    held = set()
    for seed in range(10):
        (tmp_path / str(seed)).mkdir()
        held |= _check_exact(tmp_path / str(seed), seed, CONFS[conf])
    assert held  # the seeds hold jobs back for their reservations


@pytest.mark.slow
@pytest.mark.parametrize("conf", sorted(CONFS))
def test_the_forecast_is_what_the_service_then_does_many(tmp_path: Path, conf: str) -> None:
    for seed in range(10, 80):
        (tmp_path / str(seed)).mkdir()
        _check_exact(tmp_path / str(seed), seed, CONFS[conf])


def test_a_held_job_is_forecast_to_start_with_its_reservation(tmp_path: Path) -> None:
    c = Cluster(tmp_path)
    try:
        rid = c.reserve(90, 600, 2, 4, 120)
        assert rid is not None
        c.svc._apply_now(_job("late", "dedicated", 2, "4", 60, {"apportion.io/reservation": rid})
                         + _job("never", "dedicated", 1, "1", 60, {"apportion.io/reservation": "reservation_1_0001"}),
                         [])
        c.tick()
        assert {"t/late", "t/never"} <= c.svc.live.hidden.keys()
        fc = c.forecast()
        by = {j.job: j for j in fc.jobs}
        late, never = by["t/late"], by["t/never"]
        assert late.held_for == rid and late.start_in is not None
        start = fc.now.timestamp() + late.start_in
        plan = c.svc.reservations.plans["dedicated"].plan
        begins = plan.reservations[next(r for r in plan.reservations if str(r) == rid)].start
        # the first tick whose follower step (the clock rounded up to the plan's 1 s step) sees it
        assert start * 1000 == begins
        assert never.start_in is None and never.held_for == "reservation_1_0001"
        assert "held out of the scheduler" in never.reason
        js = fc.to_json()["jobs"]
        assert {j["job"]: j.get("heldFor") for j in js} == {"t/late": rid, "t/never": "reservation_1_0001"}
        assert c.starts({"t/late"}, 200)["t/late"] * 1000 == begins - T0
    finally:
        c.svc.close()


def _reserved_cluster(tmp_path: Path, seed: int, n: int, spread: int = 300) -> Cluster:
    rng = random.Random(seed)
    c = Cluster(tmp_path)
    for _ in range(n):
        a = rng.randint(0, spread)
        c.reserve(a, a + rng.randint(60, 600), rng.randint(1, 4), rng.choice([1, 2, 4]), rng.randint(5, 200))
    c.tick()
    return c


def _published(tl: PlanTimeline, st: Any) -> dict[str, Any]:
    made, _ = reservation_queues({tl.taken.queue: st}, {tl.taken.queue: (
        tl.taken.capability, tl.taken.settings.overuse, tl.entry.plan.dims, st.plan_capacity, st.default_queue)})
    return {o["metadata"]["name"]: o for o in made}  # (the cache holds them by name)


def test_mirror_plans_wake_the_forecast_whenever_their_queues_change(tmp_path: Path) -> None:
    """A session runs at each instant the mirror's published queues can change: stepping a second
    follower over every second shows no change anywhere else."""
    c = _reserved_cluster(tmp_path, 7, 8)
    try:
        taken = take_plans(c.svc)
        base = c.clock + 500  # not on the step: the rounding is the follower's
        wakes = sorted({t for _, t in MirrorPlan(PlanTimeline(taken.plans[0], base)).wake_points()})
        probe = PlanTimeline(taken.plans[0], base)
        assert isinstance(probe.entry.follower, IncrementalFollower)
        last: dict[str, Any] | None = None
        for s in range(0, 1200):
            queues = _published(probe, probe.entry.follower.step(base + s * 1000))
            if last is not None and queues != last:
                assert any(s - 1 < w <= s for w in wakes), s  # some wake falls in (s-1, s]
            last = queues
        assert wakes
    finally:
        c.svc.close()


def test_a_timeline_answers_as_its_follower_stepped_at_that_clock(tmp_path: Path) -> None:
    """The answers a timeline keeps for its runs (and gives again, in any order a run may ask), with
    reservations joining its plan as the clock nears them, are the queues a follower of the whole plan
    publishes when stepped at that clock."""
    # spread over hours: the replanner's window is one, so reservations join the plan along the way
    c = _reserved_cluster(tmp_path, 11, 24, spread=5 * 3600)
    try:
        taken = take_plans(c.svc).plans[0]
        base = c.clock
        tl = PlanTimeline(taken, base)
        tl.at(base)
        assert 0 < tl._added < len(tl._pending)  # not every reservation is in the plan from the start
        clocks = [base + s * 1000 for s in range(0, 6 * 3600, 97)]
        rng = random.Random(3)
        asked = clocks + rng.sample(clocks, 60)  # runs ask in order; later runs again, from now
        for clock in asked:
            got = tl.at(clock)
            fresh = PlanTimeline(taken, base)
            fresh._add_until(2**62)  # every reservation of the plan, from the start
            st = fresh.entry.follower.step(clock)
            want = _published(fresh, st)
            assert {q.name: q for q in got.children}.keys() == want.keys(), clock
            assert sorted(got.active) == sorted(str(s.id) for s in st.active), clock
            for q in got.children:  # each as the live cache parses the object the loop would publish
                assert q == parse_queue(Fields(want[q.name], "published")), (clock, q.name)
    finally:
        c.svc.close()
