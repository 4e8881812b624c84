"""The reservation a waiting job could book, planned by the reservation planner and checked by simulation.

The shape is the job's whole gang: minMember pods of its per-pod request (cpu, memory, GPUs and every
extended resource), for its runtime (`apportion.io/duration`, else one hour: said in the text). It is
planned by the project's reservation system (`apportion.simulation.reservations.SimPlan`: YARN's
ReservationSystem with its validation, the `greedy-left` agent - the earliest placement - and the
NoOverCommit policy) in plan units (memory bytes, millicores, milli-GPUs: every dimension the
request names), in one of two plans:

* the job's reservable queue (`apportion.io/reservable: "true"`, the job's queue or its parent, under
  the hierarchical capacity plugin): capacity its guarantee, else deserved, capped by the cluster (as
  the plan follower counts it), holding the reservation queues it has now for the whole window (a
  dump does not say when they end), and the pods running in its subtree until their expected end;
* otherwise a plan of the cluster: capacity every node's allocatable, holding each running pod (and
  other schedulers' pods) until its expected end (for the whole window when unknown).

The booking starts at the earliest instant the planner accepts (now or later). It is checked by
running the forecast simulator from the start state with the booking in place from its start (as
the plan follower publishes one: a queue deserving, guaranteeing and capped to the gang, the job
moved into it; in a reservable queue a child, the default child's share reduced by it) and seeing
the job start in the session at the booked start. When that session does not start it (nodes still
held, an eviction not yet done), the next instants at which a pod ends are tried, a few of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, timedelta
from typing import Any

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE, Snapshot
from apportion.forecast.fit import Search, Suggestion, natural
from apportion.forecast.forward import ForwardRun, run_from_now
from apportion.forecast.start import JobStart, StartState
from apportion.forecast.text import resources as fmt_res
from apportion.forecast.text import seconds
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.resmath import Res
from apportion.reservation.stepfn import StepFunction
from apportion.reservation.system import ReservationSystem
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.simulation.reservations import (
    CLUSTER_TIMESTAMP,
    SimPlan,
    default_child,
    plan_capacity,
    plan_dims,
    to_ms,
    to_vector,
)
from apportion.simulation.scenario import RESERVABLE_KEY, RESERVATION_ID_KEY
from apportion.simulation.specs import PlanSpec, ReservationSpec, StageSpec

#: the name of the reservation queue a suggestion adds (checked sessions only)
SUGGESTED = "suggested-reservation"
#: how far ahead the planner may look, and the runtime assumed for a job without one
WINDOW = 7 * 86400
DEFAULT_RUNTIME = 3600.0
#: booked starts tried when the session at the planner's start does not start the job
TRIES = 3
#: the plan name of the cluster plan (no reservable queue)
CLUSTER_PLAN = "cluster"


def _reservable(search: Search) -> QueueInfo | None:
    q = search.queues.get(search.job.queue)
    if q is None or not search.hierarchical:
        return None
    if q.annotations.get(RESERVABLE_KEY) == "true":
        return q
    parent = search.queues.get(q.parent)
    if parent is not None and parent.annotations.get(RESERVABLE_KEY) == "true":
        return parent
    return None


def _subtree(queues: dict[str, QueueInfo], name: str) -> set[str]:
    under = {name}
    grew = True
    while grew:
        grew = False
        for q in queues.values():
            if q.parent in under and q.name not in under:
                under.add(q.name)
                grew = True
    return under


def _held(state: StartState, search: Search, parent: QueueInfo | None) -> list[tuple[float, float, Resource]]:
    """What the plan holds before the booking: (from, to, amount) in seconds from now."""
    out: list[tuple[float, float, Resource]] = []
    under: set[str] | None = None
    promised: set[str] = set()  # reservation queues: their jobs are within the queue's promise
    if parent is not None:
        under = _subtree(search.queues, parent.name)
        for q in sorted(search.queues.values(), key=lambda q: q.name):
            if q.parent == parent.name and "apportion.io/reservation" in q.annotations:
                out.append((0.0, WINDOW, q.deserved))
                promised.add(q.name)
    else:
        out.extend((0.0, WINDOW, o.resreq) for o in state.orphan_tasks)
    for js in state.jobs:
        if under is not None and js.template.queue not in under:
            continue
        if js.template.queue in promised:
            continue
        for t in js.tasks:
            if t.status in ("running", "releasing"):
                end = WINDOW if t.remaining is None else min(WINDOW, max(0.0, t.remaining))
                if end > 0:
                    out.append((0.0, end, t.template.resreq))
    return out


def booking_patch(change: dict[str, Any], hierarchical: bool) -> Callable[[Snapshot], None]:
    """The booking of a `reservation` change (its JSON) as the plan follower publishes it, on the
    objects of one session: the queue, the default child's share reduced, the job moved in."""
    per = Resource.from_natural(change["perPod"])
    amount = per.clone().multi(change["pods"])
    amount.scalars.pop(PODS, None)
    plan_queue = change.get("queue")
    uid = change["job"]

    def patch(snap: Snapshot) -> None:
        parent = snap.queues.get(plan_queue) if plan_queue else None
        base = parent or snap.queues.get(ROOT_QUEUE)
        names = frozenset({CPU, MEMORY, *(n for n in amount.names() if n != PODS)})
        snap.queues[SUGGESTED] = QueueInfo(
            name=SUGGESTED, weight=1, capability=amount.clone(), deserved=amount.clone(), guarantee=amount.clone(),
            capability_set=True, deserved_set=True,
            parent=parent.name if parent is not None else (ROOT_QUEUE if hierarchical else ""),
            reclaimable=base.reclaimable if base is not None else True,
            priority=base.priority if base is not None else 0,
            creation=base.creation if base is not None else "",
            annotations={"apportion.io/reservation": SUGGESTED}, capability_names=names)
        if parent is not None:
            d = snap.queues.get(default_child(parent.name))
            if d is not None:
                snap.queues[d.name] = replace(d, deserved=d.deserved.exceeded_part(amount),
                                              guarantee=d.guarantee.exceeded_part(amount))
        job = snap.jobs.get(uid)
        if job is not None:
            # in place, with a new queue object beside it: enqueue's carried backlog (K47) reads a job's
            # queue when it takes the job in, and is carried only over the last session's queue objects
            job.queue = SUGGESTED
            job.annotations = {**job.annotations, RESERVATION_ID_KEY: SUGGESTED}
    return patch


def first_start(state: StartState, uid: str, horizon: float,
                bookings: list[tuple[float, Callable[[Snapshot], None]]]) -> float | None:
    """Job `uid`'s first start (seconds from now) in the forecast simulator run to `horizon` with these
    bookings, or None."""
    return run_from_now(state, uid, horizon, bookings)


def starts_at(state: StartState, uid: str, start: float, patch: Callable[[Snapshot], None]) -> bool:
    """Does the forecast simulator, with `patch` applied from `start` (seconds from now), start job
    `uid` in the session at `start` (and not before)?"""
    first = first_start(state, uid, start + state.period, [(start, patch)])
    return first is not None and abs(first - start) < 1e-6


def _plan(search: Search, parent: QueueInfo | None, per: Resource, step: float) -> SimPlan:
    name = parent.name if parent is not None else CLUSTER_PLAN
    cap = plan_capacity(parent, search.total) if parent is not None else search.total.clone()
    return empty_plan(name, cap, per, step)


def empty_plan(name: str, cap: Resource, per: Resource, step: float) -> SimPlan:
    """A plan of capacity `cap` for a booking of `per` a pod, nothing in it yet."""
    cap = cap.clone()
    cap.scalars.pop(PODS, None)
    dims = plan_dims(cap, per)
    spec = PlanSpec(policy="NoOverCommit", step=step, replanner=False, agent="greedy-left")
    sp = SimPlan(ReservationSystem(CLUSTER_TIMESTAMP), name, spec, step, dims)
    sp.set_capacity(cap)
    return sp


def hold_one_by_one(sp: SimPlan, held: list[tuple[float, float, Resource]]) -> None:
    """Record what is held in the plan, each amount as its own allocation (the reference for
    `hold_summed`: the same loads, one walk of the plan's breakpoints per amount)."""
    for s, e, r in held:
        vec, _missing = to_vector(r, sp.dims)
        if any(vec):
            # what is held is a fact, not a request: recorded as recovered, past the sharing policy
            sp.plan.add_reservation(ReservationAllocation(
                sp.system.new_reservation_id(), "held", None, to_ms(s), to_ms(e), [(to_ms(s), to_ms(e), vec)]),
                is_recovering=True)


def held_pieces(held: list[tuple[float, float, Resource]], dims: tuple[str, ...]) -> list[tuple[int, int, Res]]:
    """What is held, summed over time in plan units: disjoint pieces, in time order."""
    vecs = []
    for s, e, r in held:
        vec, _missing = to_vector(r, dims)
        if any(vec):
            vecs.append((to_ms(s), to_ms(e), vec))
    return StepFunction.from_intervals(vecs, (0,) * len(dims)).nonzero_pieces() if vecs else []


def hold_summed(sp: SimPlan, pieces: list[tuple[int, int, Res]]) -> None:
    """Record what is held (`held_pieces`) in the plan as one recovered allocation of the user
    "held": the plan's load and that user's load are the ones `hold_one_by_one` gives, and the
    agent and the sharing policy read only those (and the booking's own allocation)."""
    if pieces:
        sp.plan.add_reservation(ReservationAllocation(
            sp.system.new_reservation_id(), "held", None, pieces[0][0], pieces[-1][1], pieces), is_recovering=True)


class Rerun:
    """The reference for `ForwardRun` (forecast/forward.py): every try simulated from now."""

    def __init__(self, state: StartState, uid: str) -> None:
        self.state = state
        self.uid = uid

    def first_start(self, start: float, horizon: float,
                    bookings: list[tuple[float, Callable[[Snapshot], None]]]) -> float | None:
        """`first_start` (`start`: where the bookings begin, unused here)."""
        return first_start(self.state, self.uid, horizon, bookings)

    def starts_at(self, start: float, patch: Callable[[Snapshot], None]) -> bool:
        """`starts_at`."""
        return starts_at(self.state, self.uid, start, patch)


def reservation_suggestion(js: JobStart, search: Search, *, reference: bool = False) -> list[Suggestion]:
    """The earliest booking of the job's gang the planner accepts that the simulation confirms.

    The tries share one forward run (`ForwardRun`) and the held pods are summed once for every
    try's plan; `reference=True` simulates each try from now and records each held pod apart."""
    state = search.state
    if not search.pending:
        return []
    per = search.pending[0].resreq
    if any(not t.resreq.equal(per) for t in search.pending):
        return []
    parent = _reservable(search)
    m = max(1, search.job.min_available)
    per = per.clone()
    per.scalars.pop(PODS, None)
    runtime = js.runtime if js.runtime is not None and math.isfinite(js.runtime) else DEFAULT_RUNTIME
    step = state.period
    duration = max(step, math.ceil(runtime / step) * step)
    held = _held(state, search, parent)
    ends = sorted({e for _s, e, _r in held if 0 < e < WINDOW})
    arrival = 0.0
    tries: Rerun | ForwardRun | None = None
    summed: list[tuple[int, int, Res]] | None = None
    for _ in range(TRIES):
        sp = _plan(search, parent, per, step)
        if reference:
            hold_one_by_one(sp, held)
        else:
            if summed is None:  # the same for every try: the plans' dimensions are
                summed = held_pieces(held, sp.dims)
            hold_summed(sp, summed)
        res = sp.submit(ReservationSpec(name=f"forecast-{search.uid}", queue=sp.queue, user="forecast",
                                        submit_at=0.0, arrival=arrival, deadline=arrival + duration + WINDOW,
                                        interpreter="R_ALL", gang=True,
                                        stages=[StageSpec(per, m, duration, m)]), 0.0)
        if not res.accepted or res.reservation is None or not res.reservation.pieces:
            return []
        start = min(a for a, _b, _r in res.reservation.pieces)
        change = {"type": "reservation", "plan": "queue" if parent is not None else "cluster",
                  "queue": parent.name if parent is not None else None, "job": search.uid, "pods": m,
                  "perPod": natural(per), "start": start, "durationSeconds": duration}
        patch = booking_patch(change, search.hierarchical)
        # a booking no earlier than the job's own start is no suggestion (and a later try only later)
        anyway = search.known.by(start) if search.known is not None and start > 0 else None
        if anyway:
            return []
        if tries is None:  # made once a try needs simulating: its simulator costs a start state's set-up
            tries = Rerun(state, search.uid) if reference else ForwardRun(state, search.uid)
        if tries.starts_at(start, patch):
            if anyway is None and start > 0 and tries.first_start(start, start, []) is not None:
                return []
            return [_suggestion(js, search, change, patch, per.clone().multi(m))]
        later = [e for e in ends if e > start]
        if not later:
            return []
        arrival = later[0]
    return []


def _suggestion(js: JobStart, search: Search, change: dict[str, Any], patch: Callable[[Snapshot], None],
                amount: Resource) -> Suggestion:
    start, duration, m = change["start"], change["durationSeconds"], change["pods"]
    where = f"queue {change['queue']}'s plan" if change["queue"] else "a cluster plan"
    when = "now" if start == 0 else (
        f"{(search.state.now + timedelta(seconds=start)).astimezone(UTC):%H:%M:%S} UTC "
        f"(in {seconds(start)}, an estimate)")
    basis = "" if js.runtime is not None else f" (runtime unknown: {seconds(DEFAULT_RUNTIME)} assumed)"
    return Suggestion(
        kind="reservation", cost=search.cost(amount), patch=patch,
        text=f"book {m} x ({fmt_res(change['perPod'])}) in {where} from {when} for {seconds(duration)}"
             f"{basis}", change=change)
