"""The service's reservation plans as a forecast runs them forward (issue 21).

A forecast from the live cache (service/forecasts.py) has to see what the scheduling loop will do as
time passes, not the plan followers' queues frozen as they are now: reservations start, change size and
end, their queues come and go, `<queue>-default`'s share moves with them, and a job submitted to a
reservation that has not started joins the scheduler when it does (live.py keeps it out until then).

`take_plans` copies, under the service's read lock, what that needs: each plan's reservations and
settings, the queue names the followers published, and the podgroups (with their pods) kept out.
`plans_ahead` then makes, outside the lock, what the forecast simulator runs (`forecast.api.LiveAhead`):

* a `MirrorPlan` per reservable queue, over a `PlanTimeline`: a plan with the same settings,
  capacity and reservations in a reservation system of its own (nothing stored), with a follower of
  its own. At each simulated session the timeline answers what the loop's tick at the service clock
  that session stands for would publish: the follower's state made into queues exactly as the loop
  publishes them (the loop's `publish.QueuePublisher`, parsed as the live cache parses the
  followers' queues), worked out once per interval between the follower's wake instants and shared
  by every simulation of the forecast; a reservation joins the mirror's plan as the clock nears it. A reservation's job that has not started when its reservation ends
  leaves the sessions, as live.py routes it (`SimPlan.hold_unstarted`);
* the jobs kept out, built as the cache would hold them once routed to their reservation's queue,
  and held by the simulator until its follower finds that reservation active;
* finished jobs kept as Completed, evicted pods stopping alone and the cache's queue order
  (`LiveAhead`'s other settings, for a live cluster).

The forecast's now is the loop's next session (service/forecasts.py `next_session`) and its sessions
follow every period from there; a running server's ticks fall where its timer puts them, so a start is
an estimate to within a period.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any

from apportion.cluster.model import JobInfo, QueueInfo
from apportion.forecast.api import LiveAhead
from apportion.kube import build_snapshot
from apportion.lean_dataclass import dataclass
from apportion.reservation.agents import make_agent
from apportion.reservation.allocation import ReservationAllocation
from apportion.reservation.resmath import round_up
from apportion.reservation.system import ReservationSystem
from apportion.resources import Resource
from apportion.service.live import GROUP_KEY, RESERVATION_KEY, QueueRecords
from apportion.service.publish import PlanInputs, QueuePublisher
from apportion.service.reservations import PlanSettings, new_plan
from apportion.simulation.reservations import FollowerResult, SimPlan
from apportion.simulation.specs import PlanSpec

if TYPE_CHECKING:
    from apportion.reservation.system import PlanEntry
    from apportion.service.core import Service

#: how far ahead a periodic reservation's recurrences wake the forecast's sessions (seconds); a
#: forecast runs at most `FORWARD_SESSION_LIMIT` sessions, and every other change wakes it anyway
PERIODIC_AHEAD_S = 30 * 86400


@dataclass
class PlanCopy:
    """One plan as `take_plans` copied it."""

    queue: str
    settings: PlanSettings
    capacity: tuple[int, ...]
    dims: tuple[str, ...]
    cluster: Any
    #: the service's reservations (read only) with their acceptance time when copied (the one
    #: field the plan may still write on them: a failed update's rollback)
    reservations: list[tuple[ReservationAllocation, int]]
    #: the reservable queue's stored capability (what its queues' capability is made from)
    capability: Any


@dataclass
class PlansTaken:
    """What a forecast needs of the service's plans, copied at one moment between two ticks."""

    plans: list[PlanCopy]
    #: the queues the followers published (their names), which the simulator's followers own
    generated: set[str]
    #: podgroup uid -> (reservation id, the podgroup and its pods, as stored)
    held: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: the stored PriorityClasses (a held job's priority)
    priority_classes: list[dict[str, Any]] = field(default_factory=list)


def take_plans(svc: Service) -> PlansTaken:
    """Copy the plans, the followers' queue names and the held podgroups (call under the read lock,
    between ticks; the copies are made outside it by `plans_ahead`)."""
    objects = svc.objects.objects
    plans = []
    for name, entry in sorted(svc.reservations.plans.items()):
        settings = svc.plan_settings.get(name)
        if settings is None:
            continue
        spec = (objects.get(("Queue", "", name)) or {}).get("spec") or {}
        plans.append(PlanCopy(
            queue=name, settings=settings, capacity=tuple(entry.plan.capacity), dims=entry.plan.dims,
            cluster=entry.cluster,
            reservations=[(r, r.acceptance_time) for r in entry.plan.reservations.values()],
            capability=copy.deepcopy(spec.get("capability"))))
    held: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    hidden = svc.live.hidden
    if hidden:
        pods: dict[str, list[dict[str, Any]]] = {}
        for (kind, ns, _), o in objects.items():
            if kind == "Pod":
                group = ((o.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY)
                if group and f"{ns}/{group}" in hidden:
                    pods.setdefault(f"{ns}/{group}", []).append(o)
        for uid in sorted(hidden):
            ns, name = uid.split("/", 1)
            pg = objects.get(("PodGroup", ns, name))
            rid = ((pg.get("metadata") or {}).get("annotations") or {}).get(RESERVATION_KEY) if pg else None
            if pg is not None and isinstance(rid, str):
                held[uid] = (rid, copy.deepcopy([pg, *pods.get(uid, [])]))
    classes = [copy.deepcopy(o) for (kind, _, _), o in objects.items() if kind == "PriorityClass"] if held else []
    return PlansTaken(plans, set(svc.live.generated), held, classes)


class PlanTimeline:
    """One mirrored plan's published queues over time, worked out once for all the simulations of a
    forecast (its runs, the fit checks and their copies share it).

    The plan is the service's (the same settings, capacity and reservations) in a reservation system
    of its own, with nothing stored and a follower of its own. What the follower publishes changes
    only at its wake instants (`wake_points`), so it is stepped once per wake interval a session asks
    about, in increasing order (the sessions of every run fall on one grid, and each run asks about
    every interval its sessions reach), and the answer is kept for the other runs. A reservation
    joins the plan once the clock is within the replanner's window (and a step) of its start: the
    follower reads only what is active at its step, and the replanner what is active within its
    window, so a forecast recovers the reservations it reaches rather than the plan's whole future."""

    def __init__(self, taken: PlanCopy, base_ms: int) -> None:  # noqa: D107 (the class says it)
        settings = taken.settings
        self.taken = taken
        self.base_ms = base_ms
        system = ReservationSystem()
        plan, replanner = new_plan(taken.queue, settings, taken.capacity, taken.dims, base_ms)
        self.entry: PlanEntry = system.add_plan(plan, make_agent(settings.agent), replanner, taken.cluster)
        #: the reservations not in the plan yet, by start (`_add_until`)
        # (one that ended before the base clock is never active at a step again)
        self._pending = sorted((ra for ra in taken.reservations if ra[0].end > base_ms or ra[0].period > 0),
                               key=lambda ra: (ra[0].start, ra[0].id))
        self._added = 0
        self._ahead = (settings.replanner_ms or 0) + plan.step
        self.wakes = self._wakes()
        self._wake_ms = [base_ms + int(round(t * 1000)) for _, t in self.wakes]
        # a periodic reservation's recurrences are woken for `PERIODIC_AHEAD_S`: past that the
        # follower is asked at every session
        periodic = any(r.period > 0 for r, _ in taken.reservations)
        self._kept_until = base_ms + PERIODIC_AHEAD_S * 1000 if periodic else None
        self._records = QueueRecords()
        #: the loop's own publisher: after a step it names only the queues made, changed or gone
        self._publisher = QueuePublisher()
        #: the plan's queues as published so far, parsed: an unchanged queue keeps its QueueInfo, as
        #: the live cache keeps a queue no event changed (the simulator then tells its cache nothing)
        self._queues: dict[str, QueueInfo] = {}
        self._results: dict[int, FollowerResult] = {}
        self._stepped = -2

    def _wakes(self) -> list[tuple[str, float]]:
        step, base = self.entry.plan.step, self.base_ms
        out = []
        for r, _ in sorted(self.taken.reservations, key=lambda ra: ra[0].id):
            points = {r.start, r.end}
            if r.period > 0:
                offsets = {a % r.period for a, _b, _v in r.intervals} | {b % r.period for _a, b, _v in r.intervals}
                k = max(r.start, base) - max(r.start, base) % r.period
                last = min(r.end, base + PERIODIC_AHEAD_S * 1000)
                while k <= last:
                    points.update(k + o for o in offsets if r.start <= k + o < r.end)
                    k += r.period
            else:
                points.update(t for a, b, _v in r.intervals for t in (a, b))
            for b in sorted(points):
                seen = round_up(b, step) - step + 1
                if seen > base:
                    out.append((str(r.id), (seen - base) / 1000))
        return sorted(out, key=lambda w: (w[1], w[0]))

    def at(self, clock: int) -> FollowerResult:
        """What the loop's tick at the service clock `clock` publishes of the plan."""
        if self._kept_until is not None and clock > self._kept_until:
            return self._step(clock)
        k = bisect_right(self._wake_ms, clock) - 1
        got = self._results.get(k)
        if got is None:
            if k < self._stepped:  # an interval no session asked about before: a follower of its own
                got = PlanTimeline(self.taken, self.base_ms)._step(clock)
            else:
                got = self._step(clock)
                self._stepped = k
            self._results[k] = got
        return FollowerResult(list(got.children), list(got.active), list(got.removed_by_replanner))

    def _add_until(self, clock: int) -> None:
        """Every reservation starting within the replanner's window and a step of `clock` joins the
        plan, as recovered (past the sharing policy, with the acceptance time it had)."""
        plan, pending = self.entry.plan, self._pending
        limit = round_up(clock, plan.step) + self._ahead
        while self._added < len(pending) and pending[self._added][0].start <= limit:
            r, accepted = pending[self._added]
            plan.add_reservation(ReservationAllocation.from_stored(replace(r.stored(), acceptance_time=accepted)),
                                 is_recovering=True)
            self._added += 1

    def _step(self, clock: int) -> FollowerResult:
        """The follower steps at `clock`, and the loop's publisher (`publish.QueuePublisher`, with the
        reservable queue's capability, over-use and the plan's dimensions as `loop.plan_inputs` gives
        them) says which queues that makes, changes or ends; those are parsed as the live cache
        parses the followers' queues."""
        self._add_until(clock)
        st = self.entry.follower.step(clock)
        inputs: PlanInputs = (self.taken.capability, self.taken.settings.overuse, self.entry.plan.dims,
                              st.plan_capacity, st.default_queue)
        out = self._publisher.publish({self.taken.queue: st}, {self.taken.queue: inputs})
        for name, obj in sorted(out.changed.items()):
            if obj is None:
                self._queues.pop(name, None)
            else:
                self._queues[name] = self._records.record(obj, f"plan follower: {name}")
        return FollowerResult(children=list(self._queues.values()), active=sorted(out.active),
                              removed_by_replanner=[str(r) for r in st.replanned])


class MirrorPlan(SimPlan):
    """A service plan for the forecast simulator (see the module): `follow` answers what the loop
    would publish (`PlanTimeline`); a copy of it (each simulation gets one) shares the timeline."""

    hold_unstarted = True

    def __init__(self, timeline: PlanTimeline) -> None:  # noqa: D107 (the class says it)
        # not SimPlan's set-up: the plan is the service's (its units, settings and reservations)
        settings = timeline.taken.settings
        self.timeline = timeline
        self.entry = timeline.entry
        self.system = ReservationSystem()
        self.queue = timeline.taken.queue
        self.spec = PlanSpec(move_on_expiry=settings.move_on_expiry, overuse=settings.overuse,
                             step=settings.step_ms / 1000)
        self.step = settings.step_ms / 1000
        self.dims = timeline.taken.dims
        self.capacity = Resource()
        self.reservations = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> MirrorPlan:
        return MirrorPlan(self.timeline)

    def follow(self, queue: QueueInfo, now: float, cluster_total: Resource) -> FollowerResult:
        """The loop's tick at the service clock of `now` (seconds after the timeline's base)."""
        return self.timeline.at(self.timeline.base_ms + int(round(now * 1000)))

    def wake_points(self) -> list[tuple[str, float]]:
        """The first instant (seconds after the base clock) at which the follower sees each start,
        end and change of size of a reservation: its step rounds the clock up to the plan's step, so
        a change at B shows from the clock `round_up(B) - step + 1` ms. A periodic reservation's
        recurrences count for `PERIODIC_AHEAD_S`."""
        return list(self.timeline.wakes)


def _held_jobs(taken: PlansTaken) -> dict[str, JobInfo]:
    """The held podgroups as the live cache builds them once routed to their reservation's queue."""
    docs: list[tuple[str, Any]] = [(f"PriorityClass {(o.get('metadata') or {}).get('name')}", o)
                                   for o in taken.priority_classes]
    for rid in sorted({rid for rid, _ in taken.held.values()}):
        docs.append((f"Queue {rid}", {"kind": "Queue", "metadata": {"name": rid}, "spec": {}}))
    for uid, (rid, objs) in sorted(taken.held.items()):
        pg = copy.deepcopy(objs[0])
        pg.setdefault("spec", {})["queue"] = rid
        docs.append((f"PodGroup {uid}", pg))
        docs.extend((f"Pod {uid} {i}", o) for i, o in enumerate(objs[1:]))
    snap = build_snapshot(docs)
    return {uid: snap.jobs[uid] for uid in taken.held if uid in snap.jobs}


def plans_ahead(taken: PlansTaken, snap_queues: dict[str, QueueInfo], jobs: dict[str, JobInfo],
                base_ms: int) -> LiveAhead:
    """The forecast's plans from what `take_plans` copied; the held jobs are added to `jobs` (the
    forecast's snapshot's, a copy)."""
    plans: dict[str, SimPlan] = {}
    children: dict[str, list[QueueInfo]] = {}
    for taken_plan in taken.plans:
        plans[taken_plan.queue] = MirrorPlan(PlanTimeline(taken_plan, base_ms))
        children[taken_plan.queue] = [q for n, q in snap_queues.items()
                                      if n in taken.generated and q.parent == taken_plan.queue]
    held: dict[str, str] = {}
    if taken.held:
        for uid, ji in _held_jobs(taken).items():
            # (a held podgroup with a pod on a node, which the service hides with its pods, is left
            # out as the service leaves it out)
            if uid not in jobs and not any(t.node_name for t in ji.tasks.values()):
                jobs[uid] = ji
                held[uid] = ji.queue
    return LiveAhead(plans, children, held, queue_order=list(snap_queues))
